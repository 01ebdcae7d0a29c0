"""The simulated fleet: nodes `node-1` .. `node-N`, each with its own `SimulatedNvml`, and their faults.

The fleet is the state behind the chaos API: `inject` validates a request (raising `FaultError` with a
reason) and applies it to the right node's simulator; `clear` resets GPUs and brings nodes back.
Node-level faults (`node-down`) are kept here because they concern the scrape target, not NVML; disk
faults (`disk-failing`, `DiskFaults`) because the node health exporter reads them from GET /chaos.
`jobs` simulated training jobs run on the fleet (`exporters.sim.jobs`; `self.jobs` is their schedule,
on the fleet's `clock`): the GPUs of the nodes with job slots compute only while a job runs on them.
"""

from __future__ import annotations

import threading
import time
from typing import Any, Callable

from vigil.exporters.sim.disk_faults import DiskFaults
from vigil.exporters.sim.faults import DISK_FAULTS, JOB_FAULTS, NODE_FAULTS, Fault, FaultError, parse_fault
from vigil.exporters.sim.jobs import HANG, JobSchedule
from vigil.exporters.sim.nvml import H100_SXM_REFUSED, SimulatedNvml


def node_name(i: int) -> str:
    """Name of the i-th node (1-based)."""
    return f"node-{i}"


class SimulatedFleet:
    """`nodes` simulated nodes of `gpus` GPUs each running `jobs` job slots; `on_node_state(name, up)`
    hears node-down changes; `clock` is the simulators' and the jobs' time (tests pass a fake one);
    `job_hang_rate` is the share of jobs that hang on their own (`JobSchedule`)."""

    def __init__(self, nodes: int = 4, gpus: int = 8, *, nvlinks: int = 18, jobs: int = 0, job_seed: int = 0,
                 job_hang_rate: float = HANG, clock: Callable[[], float] = time.time,
                 on_node_state: Callable[[str, bool], None] | None = None) -> None:
        if nodes < 1 or gpus < 1:
            raise ValueError("a fleet needs at least one node with at least one GPU")
        self.clock = clock
        self.nvml = {node_name(i): SimulatedNvml(node_name(i), gpus, nvlinks=nvlinks, clock=clock,
                                                 unsupported=H100_SXM_REFUSED)
                     for i in range(1, nodes + 1)}
        self.gpus = gpus
        self.jobs = JobSchedule(list(self.nvml), gpus, jobs, seed=job_seed, hang_rate=job_hang_rate)
        for name in self.jobs.managed_nodes:
            self.nvml[name].jobs = self.jobs
        self._lock = threading.Lock()
        self._down: dict[str, Fault] = {}
        self.disks = DiskFaults()
        self._listeners: list[Callable[[str, bool], None]] = [on_node_state] if on_node_state else []
        self._fault_listeners: list[Callable[[Fault], None]] = []

    def add_listener(self, listener: Callable[[str, bool], None]) -> None:
        self._listeners.append(listener)

    def add_fault_listener(self, listener: Callable[[Fault], None]) -> None:
        """`listener(fault)` after each GPU fault is applied (the fleet server wakes its XID pump)."""
        self._fault_listeners.append(listener)

    @property
    def names(self) -> list[str]:
        return list(self.nvml)

    def is_down(self, node: str) -> bool:
        return node in self._down

    def inject(self, body: Any) -> Fault:
        """Validate and apply a fault request (see `exporters.sim.faults.parse_fault`)."""
        fault = parse_fault(body, {name: self.gpus for name in self.nvml})
        if fault.fault in NODE_FAULTS:
            with self._lock:
                self._down[fault.node] = fault
            for listener in self._listeners:
                listener(fault.node, False)
        elif fault.fault in DISK_FAULTS:
            fault = self.disks.inject(fault)
        elif fault.fault in JOB_FAULTS:
            fault = self.jobs.hang(Fault(fault.fault, fault.node, fault.gpu, self.clock(), fault.params))
        else:
            self.nvml[fault.node].inject(fault)
            for listener in self._fault_listeners:
                listener(fault)
        return fault

    def clear(self, node: str | None = None) -> int:
        """Reset every GPU of `node` (or of the whole fleet) and bring the node(s) back; count cleared faults."""
        if node is not None and (not isinstance(node, str) or node not in self.nvml):
            raise FaultError(f"unknown node {str(node)[:60]!r}; the fleet has node-1 .. node-{len(self.nvml)}")
        names = [node] if node is not None else list(self.nvml)
        cleared = 0
        for name in names:
            cleared += self.nvml[name].reset() + self.disks.clear(name) + self.jobs.clear(name)
            with self._lock:
                was_down = self._down.pop(name, None) is not None
            if was_down:
                cleared += 1
                for listener in self._listeners:
                    listener(name, True)
        return cleared

    def faults(self) -> list[Fault]:
        """Active faults, node faults first, then GPU faults, then disk and job faults, in a stable order."""
        with self._lock:
            down = list(self._down.values())
        gpu_faults = [f for nvml in self.nvml.values() for f in nvml.active_faults()]
        order = {name: i for i, name in enumerate(self.nvml)}  # node-2 before node-10
        return (sorted(down, key=lambda f: (order[f.node], f.since))
                + sorted(gpu_faults, key=lambda f: (order[f.node], f.gpu, f.since)) + self.disks.faults(self.names)
                + sorted(self.jobs.faults(self.clock()), key=lambda f: (order[f.node], f.gpu, f.since)))
