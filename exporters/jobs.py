"""Which job holds each GPU: a cached map GPU process -> job, refreshed in the background.

`JobAttributionCollector(processes, sources, node, refresh_interval)` asks `processes()` (the GPU
collector's view: host PIDs on each GPU) for the current GPU processes and each source in turn for the
job of each process, at most once per `refresh_interval`, in a background thread; scrapes serve the
last map and cost nothing. Sources (`exporters.job_sources`): Kubernetes pod-resources (GPU UUID ->
pod), Slurm (`SLURM_JOB_ID` in `/proc/<pid>/environ`), container cgroups (`/proc/<pid>/cgroup`).

A process is a *job* process when a source names its job, *zombie* when that source says the job has
finished, *external* when no source claims it (someone running on the GPU outside the scheduler).

A job keeps its GPUs for its life: a GPU that the GPU collector cannot read (`unreadable()`: fallen off
the bus, XID 79, or stalled) lists no process, so the jobs that held it at the last cycle stay attributed
to it (same `uuid`) until their source says they have finished (`JobSource.is_finished`) or the GPU reads
again; the job of a GPU that was unreadable before its first attribution is not known.
"""

from __future__ import annotations

import threading
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable, Iterable, Protocol

from vigil.exporters.background import BackgroundSnapshot
from vigil.exporters.metric_families import add, family
from vigil.exporters.spec import GpuProcess, MetricSpec

GPU_LABELS = ("node", "gpu", "uuid")
KINDS = ("job", "external", "zombie")


@dataclass(frozen=True)
class JobRef:
    """A job as a source names it. `tenant` is the Slurm account or Kubernetes namespace."""

    job_id: str
    user: str = ""
    tenant: str = ""
    source: str = ""


class JobSource(Protocol):
    """A way to learn the job of a GPU process. Implementations live in `exporters.job_sources`."""

    name: str

    def refresh(self) -> None:
        """Called once per attribution cycle before `job_for` (list pods, active jobs, ...)."""

    def job_for(self, process: GpuProcess) -> JobRef | None:
        """The job that owns `process`, or None when this source does not know it."""

    def is_finished(self, job: JobRef) -> bool:
        """True only when the source knows `job` has ended (its processes are then zombies)."""


SPECS: list[MetricSpec] = [
    MetricSpec("vigil_gpu_job", "gauge", "", GPU_LABELS + ("job_id",),
               "1 for each job holding the GPU; join vigil_job_info on job_id for user and tenant.", "job sources"),
    MetricSpec("vigil_job_info", "info", "", ("job_id", "user", "tenant", "source"),
               "Jobs currently holding a GPU on this node (bounded: only live jobs are listed).", "job sources"),
    MetricSpec("vigil_gpu_processes", "gauge", "", GPU_LABELS + ("kind",),
               "GPU processes by kind: job, external (no job claims it), zombie (its job has finished).",
               "GPU process list + job sources"),
    MetricSpec("vigil_job_source_up", "gauge", "", ("node", "source"),
               "1 when the job source's last refresh worked, else 0.", "job sources"),
    MetricSpec("vigil_job_attribution_up", "gauge", "", ("node",),
               "1 when the last attribution cycle could list GPU processes, else 0.", "GPU process list"),
]
_BY_NAME = {s.name: s for s in SPECS}


@dataclass
class Attribution:
    """One attribution cycle: each process's job (None: external) and kind, and the sources' health."""

    processes: list[tuple[GpuProcess, JobRef | None, str]]
    sources_ok: dict[str, bool] = field(default_factory=dict)
    held: list[tuple[int, str, JobRef]] = field(default_factory=list)  # (gpu, uuid, job) of unreadable GPUs


Holders = dict[int, tuple[str, tuple[JobRef, ...]]]  # GPU index -> (uuid, jobs holding it)


def keep_holders(result: Attribution, unreadable: Iterable[int], before: Holders,
                 sources: list[JobSource]) -> Holders:
    """The GPU -> jobs map after `result`: what the processes say for the GPUs that list some, and for an
    unreadable GPU that lists none its holders of `before` whose job has not finished (a source that
    could not refresh keeps its jobs: it does not know). Adds the kept ones to `result.held`."""
    by_name = {s.name: s for s in sources}
    now: dict[int, tuple[str, dict[str, JobRef]]] = {}
    for proc, job, kind in result.processes:
        if kind == "job" and job is not None:
            now.setdefault(proc.gpu, (proc.uuid, {}))[1][job.job_id] = job
    holders: Holders = {gpu: (uuid, tuple(jobs.values())) for gpu, (uuid, jobs) in now.items()}
    listed = {proc.gpu for proc, _, _ in result.processes}
    for gpu in sorted(set(unreadable) - listed):
        uuid, jobs = before.get(gpu, ("", ()))
        alive = tuple(job for job in jobs if (source := by_name.get(job.source)) is not None
                      and (not result.sources_ok.get(source.name) or not source.is_finished(job)))
        if alive:
            holders[gpu] = (uuid, alive)
            result.held.extend((gpu, uuid, job) for job in alive)
    return holders


def attribute(processes: Iterable[GpuProcess], sources: list[JobSource],
              cache: dict[int, JobRef] | None = None) -> Attribution:
    """Map processes to jobs with `sources` (first source that knows wins). `cache` (pid -> job) skips
    sources for PIDs already attributed; pass the same dict every cycle, entries of gone PIDs are dropped."""
    sources_ok = {}
    for source in sources:
        try:
            source.refresh()
            sources_ok[source.name] = True
        except Exception:  # noqa: BLE001 - one broken source must not stop the others
            sources_ok[source.name] = False
    by_name = {s.name: s for s in sources}
    result, live = [], set()
    for proc in processes:
        live.add(proc.pid)
        job = cache.get(proc.pid) if cache is not None else None
        if job is None:
            job = next((j for s in sources if sources_ok[s.name] and (j := _safe_job_for(s, proc))), None)
            if job is not None and cache is not None:
                cache[proc.pid] = job
        if job is None:
            kind = "external"
        else:
            source = by_name.get(job.source)
            kind = "zombie" if source is not None and sources_ok[source.name] and source.is_finished(job) else "job"
        result.append((proc, job, kind))
    if cache is not None:
        for pid in set(cache) - live:  # a PID can be reused by another job: forget it once it is gone
            del cache[pid]
    return Attribution(result, sources_ok)


def _safe_job_for(source: JobSource, proc: GpuProcess) -> JobRef | None:
    try:
        return source.job_for(proc)
    except (OSError, ValueError):  # the process exited between listing and reading /proc
        return None


class JobAttributionCollector:
    """Publishes the GPU -> job map; the map is rebuilt at most every `refresh_interval` seconds."""

    def __init__(self, processes: Callable[[], list[GpuProcess]], sources: list[JobSource], node: str,
                 refresh_interval: float = 30.0, wait: float = 2.0,
                 unreadable: Callable[[], Iterable[int]] | None = None):
        names = [s.name for s in sources]
        if len(set(names)) != len(names):
            raise ValueError(f"job sources must have distinct names, got {names}")
        self.node = node
        self._processes = processes
        self._sources = list(sources)
        self._cache: dict[int, JobRef] = {}
        # unreadable(): indices of the GPUs the collector could not read (NvmlCollector.unreadable_gpus);
        # None: every GPU's processes are known, nothing is kept
        self._unreadable = unreadable
        self._holders: Holders = {}
        self._lock = threading.Lock()
        self._snapshot = BackgroundSnapshot(self._cycle, max_age=refresh_interval, wait=wait)

    def _cycle(self) -> Attribution:
        with self._lock:  # a scrape's background refresh and refresh() share the cache and the holders
            result = attribute(self._processes(), self._sources, self._cache)
            if self._unreadable is not None:
                self._holders = keep_holders(result, self._unreadable(), self._holders, self._sources)
            return result

    def refresh(self) -> None:
        """Run one attribution cycle now in the calling thread (a caller that schedules refreshes
        itself, such as the simulated fleet, passes a `refresh_interval` no scrape reaches)."""
        self._snapshot.refresh_now()

    def collect(self):
        fams = {s.name: family(s) for s in SPECS}
        snap = self._snapshot.get()
        node = {"node": self.node}
        add(fams["vigil_job_attribution_up"], _BY_NAME["vigil_job_attribution_up"], node,
            1.0 if snap is not None and snap.ok else 0.0)
        if snap is not None and snap.ok:
            self._add(fams, snap.value)
        yield from (fam for fam in fams.values() if fam.samples)

    def _add(self, fams, result: Attribution) -> None:
        for source, ok in sorted(result.sources_ok.items()):
            add(fams["vigil_job_source_up"], _BY_NAME["vigil_job_source_up"],
                {"node": self.node, "source": source}, float(ok))
        kinds: Counter = Counter()
        holders, jobs = set(), {}
        for proc, job, kind in result.processes:
            gpu = (str(proc.gpu), proc.uuid)
            for k in KINDS:
                kinds[(gpu, k)] += 0  # every kind of every busy GPU is published, zeros included
            kinds[(gpu, kind)] += 1
            if kind == "job" and job is not None:
                holders.add((gpu, job.job_id))
                jobs[job.job_id] = job
        for index, uuid, job in result.held:  # unreadable GPUs: their jobs, no process counts (unknown)
            holders.add(((str(index), uuid), job.job_id))
            jobs[job.job_id] = job
        for ((gpu, uuid), kind), count in sorted(kinds.items()):
            add(fams["vigil_gpu_processes"], _BY_NAME["vigil_gpu_processes"],
                {"node": self.node, "gpu": gpu, "uuid": uuid, "kind": kind}, count)
        for (gpu, uuid), job_id in sorted(holders):
            add(fams["vigil_gpu_job"], _BY_NAME["vigil_gpu_job"],
                {"node": self.node, "gpu": gpu, "uuid": uuid, "job_id": job_id})
        for job in sorted(jobs.values(), key=lambda j: j.job_id):
            add(fams["vigil_job_info"], _BY_NAME["vigil_job_info"],
                {"job_id": job.job_id, "user": job.user, "tenant": job.tenant, "source": job.source})
