"""Simulated training jobs: a deterministic schedule of Slurm- and Kubernetes-style jobs on the fleet.

`JobSchedule(nodes, gpus, jobs)` places `jobs` job *slots* on the fleet from node-1 on, lowest-numbered nodes
first as Slurm fills a partition (the fleet's last node stays a plain node, as the `load-anomaly` drill and
AIOps checks expect, and node-1, where dashboards open, runs jobs): each slot owns a fixed set of
GPUs on one or more nodes. In each slot, jobs follow one another: job *n* of slot *k* starts a few
minutes after its period of 45-105 minutes begins and completes at the period's end, fails part-way
(its GPUs are then free until the next period), or hangs part-way (every GPU at 0 % until the period
ends, its processes and memory still there: what `JobHung` looks for). Some jobs keep a GPU idle while
allocated (a process holds a context but computes nothing: `JobGpusIdle`). Slots 0 and 1 never fail
and are half a period apart, so some job runs at every moment.

The chaos fault `job-hang` hangs the job on a GPU now (`hang`), until `clear` or the job's end; apart
from such faults everything is a pure function of (seed, time): the simulator asks `gpu(node, gpu, t)` on its own clock
(tests pass a fake one) and the history backfill asks `load(node, gpu, t)` for the past, so history and
live series agree. Slurm jobs are seen by the Slurm job source through `/proc`-like files
(`exporters.sim.job_sources`), Kubernetes jobs through a pod-resources list: the real attribution path.
"""

from __future__ import annotations

import threading
import zlib
from dataclasses import dataclass, replace
from typing import Callable

from vigil.exporters.sim.faults import Fault, FaultError
from vigil.exporters.sim.load import gpu_load

SHAPES = ((2, 4), (1, 4), (1, 2), (2, 2), (1, 8), (3, 2))  # (nodes, GPUs per node) of slot k % 6
TENANTS = (("llm", "alice"), ("vision", "bob"), ("speech", "carol"), ("recsys", "dave"))
PERIOD_S = (2_700.0, 6_300.0)  # a job slot's period: 45 to 105 minutes
GAP_S = (60.0, 300.0)  # free time between the end of one job and the start of the next
FAIL, HANG, IDLE = 0.15, 0.12, 0.3  # chance a job fails part-way, hangs part-way, keeps a GPU idle
IDLE_MEMORY, HUNG_MEMORY = 0.03, 0.75  # fraction of GPU memory held by an idle GPU / a hung job's GPU


def _unit(*parts: object) -> float:
    return zlib.crc32("/".join(str(p) for p in parts).encode()) / 2**32


@dataclass(frozen=True)
class SimJob:
    """One job: its id as its scheduler names it, owner, GPUs, and life (Unix times)."""

    job_id: str
    scheduler: str  # "slurm" or "kubernetes"
    tenant: str
    user: str
    gpus: tuple[tuple[str, int], ...]  # (node, gpu index)
    start: float
    end: float  # when it completes, fails or is killed at its time limit
    outcome: str  # "completed", "failed" or "hung"
    hang_at: float | None = None
    idle_gpus: frozenset[tuple[str, int]] = frozenset()

    def running(self, t: float) -> bool:
        return self.start <= t < self.end

    def activity(self, node: str, gpu: int, t: float) -> str:
        """What `gpu` of this job does at `t`: "running", "idle" (allocated, computing nothing) or "hung"."""
        if self.hang_at is not None and t >= self.hang_at:
            return "hung"
        return "idle" if (node, gpu) in self.idle_gpus else "running"

    def pid(self, node: str, gpu: int) -> int:
        """Host PID of the job's process on `gpu` (one rank per GPU)."""
        return 100_000 + zlib.crc32(f"{self.job_id}/{node}/{gpu}".encode()) % 3_000_000


@dataclass(frozen=True)
class GpuJob:
    """A GPU's job at one moment and what the GPU does for it."""

    job: SimJob
    activity: str
    pid: int


@dataclass(frozen=True)
class _Slot:
    index: int
    scheduler: str
    gpus: tuple[tuple[str, int], ...]
    period: float
    offset: float


class JobSchedule:
    """The jobs of a fleet of `nodes` (names) with `gpus` GPUs each; `jobs` slots at most (fewer when
    the fleet has no room). `seed` changes every job's timing and outcome; `hang_rate` is the share of
    jobs that hang part-way on their own (0: only the chaos fault `job-hang` hangs one)."""

    def __init__(self, nodes: list[str], gpus: int, jobs: int, seed: int = 0, hang_rate: float = HANG) -> None:
        if jobs < 0:
            raise ValueError("the number of simulated jobs must be >= 0")
        if not 0.0 <= hang_rate <= 1.0 - FAIL:
            raise ValueError(f"the share of jobs that hang must be between 0 and {1.0 - FAIL:g}")
        self.seed = seed
        self.hang_rate = hang_rate
        self.slots = _place(nodes, gpus, jobs, seed)
        self._slot_of = {g: slot for slot in self.slots for g in slot.gpus}
        self.managed_nodes = frozenset(node for slot in self.slots for node, _ in slot.gpus)
        self._cache: dict[tuple[int, int], SimJob] = {}
        self._lock = threading.Lock()
        self._hung: dict[str, tuple[Fault, SimJob]] = {}  # job-hang faults by job id

    def manages(self, node: str) -> bool:
        """Whether `node` hosts job slots: its GPUs are busy only while a job runs on them."""
        return node in self.managed_nodes

    def job(self, slot: _Slot, n: int) -> SimJob:
        """Job `n` of `slot` (n counts periods since the epoch, shifted by the slot's offset)."""
        key = (slot.index, n)
        cached = self._cache.get(key)
        if cached is not None:
            return cached
        k, begin = slot.index, n * slot.period - slot.offset
        gap = GAP_S[0] + (GAP_S[1] - GAP_S[0]) * _unit(self.seed, k, n, "gap")
        start, end = begin + gap, begin + slot.period
        fate = _unit(self.seed, k, n, "fate") if k > 1 else 1.0  # slots 0 and 1 always complete
        outcome, hang_at = "completed", None
        if fate < FAIL:
            outcome, end = "failed", start + (end - start) * (0.3 + 0.5 * _unit(self.seed, k, n, "fail"))
        elif fate < FAIL + self.hang_rate:
            outcome, hang_at = "hung", start + (end - start) * 0.3
        idle = frozenset()
        if len(slot.gpus) > 1 and _unit(self.seed, k, n, "idle") < IDLE:
            idle = frozenset(slot.gpus[-max(1, len(slot.gpus) // 4):])
        tenant, user = TENANTS[int(_unit(self.seed, k, n, "owner") * len(TENANTS))]
        if slot.scheduler == "slurm":
            job_id = str(n * 100 + k)
        else:
            job_id = f"{tenant}/train-{k}-{n}"
        job = SimJob(job_id, slot.scheduler, tenant, user, slot.gpus, start, end, outcome, hang_at, idle)
        if len(self._cache) > 4096:
            self._cache.clear()
        self._cache[key] = job
        return job

    def _current(self, slot: _Slot, t: float) -> SimJob | None:
        job = self.job(slot, int((t + slot.offset) // slot.period))
        return job if job.running(t) else None

    def running(self, t: float) -> list[SimJob]:
        """Jobs running (hung ones included) at `t`."""
        return [job for slot in self.slots if (job := self._current(slot, t)) is not None]

    def describe(self, t: float) -> list[dict]:
        """The jobs running at `t` as GET /chaos lists them: owner, life, and what each GPU does."""
        return [{"job_id": job.job_id, "scheduler": job.scheduler, "tenant": job.tenant, "user": job.user,
                 "start": round(job.start, 3), "end": round(job.end, 3),
                 "gpus": [{"node": node, "gpu": gpu, "activity": held.activity if held else "free"}
                          for node, gpu in job.gpus for held in [self.gpu(node, gpu, t)]]}
                for job in self.running(t)]

    def on_node(self, node: str, t: float) -> list[SimJob]:
        return [job for job in self.running(t) if any(n == node for n, _ in job.gpus)]

    def gpu(self, node: str, gpu: int, t: float) -> GpuJob | None:
        """The job holding `gpu` of `node` at `t` and what the GPU does, or None when it is free."""
        slot = self._slot_of.get((node, gpu))
        job = self._current(slot, t) if slot is not None else None
        if job is None:
            return None
        activity = "hung" if job.job_id in self._hung else job.activity(node, gpu, t)
        return GpuJob(job, activity, job.pid(node, gpu))

    # -- the job-hang chaos fault ---------------------------------------------------------------------
    def hang(self, fault: Fault) -> Fault:
        """Hang the job holding `fault.gpu` of `fault.node` at `fault.since`; FaultError when none does."""
        held = self.gpu(fault.node, fault.gpu, fault.since) if fault.gpu is not None else None
        if held is None:
            here = sorted({gpu for job in self.on_node(fault.node, fault.since) for node, gpu in job.gpus
                           if node == fault.node})
            hint = (f"jobs hold GPUs {', '.join(map(str, here))} of {fault.node}" if here
                    else f"no job runs on {fault.node} now")
            raise FaultError(f"no simulated job holds GPU {fault.gpu} of {fault.node} now ({hint}); "
                             "GET /chaos (vigil chaos list) lists the jobs running and their GPUs")
        fault = replace(fault, job_id=held.job.job_id)
        with self._lock:
            self._hung[held.job.job_id] = (fault, held.job)
        return fault

    def clear(self, node: str) -> int:
        """End the job-hang faults injected on `node`; how many."""
        with self._lock:
            gone = [job_id for job_id, (fault, _) in self._hung.items() if fault.node == node]
            for job_id in gone:
                del self._hung[job_id]
        return len(gone)

    def faults(self, t: float) -> list[Fault]:
        """Active job-hang faults (those of jobs that have ended are dropped)."""
        with self._lock:
            for job_id in [j for j, (_, job) in self._hung.items() if t >= job.end]:
                del self._hung[job_id]
            return [fault for fault, _ in self._hung.values()]

    def load(self, node: str, gpu: int, t: float, base: Callable[[str, int, float], float] = gpu_load) -> float:
        """Utilization of a GPU at `t`: the normal pattern while its job computes, 0 when it is free,
        idle or hung; the normal pattern on nodes without job slots."""
        if node not in self.managed_nodes:
            return base(node, gpu, t)
        held = self.gpu(node, gpu, t)
        return base(node, gpu, t) if held is not None and held.activity == "running" else 0.0


def _place(nodes: list[str], gpus: int, jobs: int, seed: int) -> list[_Slot]:
    """Slots on the nodes from node-1 on, all but the last (the last too in a one-node fleet), first fit."""
    hosts = list(nodes[:-1] or nodes)
    free = {node: 0 for node in hosts}  # next free GPU index on each node
    slots: list[_Slot] = []
    for k in range(jobs):
        want_nodes, want_gpus = SHAPES[k % len(SHAPES)]
        scheduler = "kubernetes" if k % 3 == 1 else "slurm"  # a pod lives on one node
        if scheduler == "kubernetes":
            want_nodes = 1
        room = max((gpus - used for used in free.values()), default=0)
        want_gpus = min(want_gpus, gpus, room)
        if want_gpus <= 0:
            break
        chosen = [node for node in hosts if gpus - free[node] >= want_gpus][:want_nodes]
        placed = tuple((node, free[node] + i) for node in chosen for i in range(want_gpus))
        for node in chosen:
            free[node] += want_gpus
        period = PERIOD_S[0] + (PERIOD_S[1] - PERIOD_S[0]) * _unit(seed, k, "period")
        offset = period * _unit(seed, k, "offset")
        if k == 1 and slots:  # half a period after slot 0: one of the two always runs
            period, offset = slots[0].period, slots[0].offset + slots[0].period / 2
        slots.append(_Slot(k, scheduler, placed, period, offset))
    return slots
