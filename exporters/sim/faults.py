"""Faults of the simulated fleet: their names (a CLI and chaos-API contract), validation, and effects.

A fault is injected on one GPU of one node (or on a whole node for `node-down`, on one of its disks for
`disk-failing`: the simulated SMART data of `vigil exporter node --simulate`, see `exporters.sim.smart`). Injecting changes the
persistent state of the GPU (`GpuState`: ECC counters, remap flags, pending XID events); continuous
effects (temperature, throttling, growing error counts) are applied by the simulator while the fault
is active. Clearing the faults of a GPU models a GPU reset: volatile ECC counts go back to 0 while the
aggregate (lifetime) counts persist, and the flags reset.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

# fault name -> one-line description (the chaos API and docs/exporters.md list these)
FAULTS: dict[str, str] = {
    "xid79": "GPU fell off the bus: every NVML call on it raises GPU_IS_LOST; XID 79 event",
    "ecc-dbe": "uncorrectable ECC error: uncorrected counts jump, XID 48, remap pending, reset required",
    "overheat": "temperature ~95 C, HW/SW thermal slowdown, SM clock drops, thermal violation time grows",
    "node-down": "the node's scrape target refuses connections until cleared",
    "ecc-storm": "high corrected-ECC rate (about 50/s) with XID 92 and 94 events",
    "row-remap-failure": "row remapping failed: remap failure flag, XID 64, node reboot recommended",
    "xid-burst": "`count` (default 13) events of XID `xid` (default 13) delivered at once",
    "thermal-throttle": "software thermal slowdown: SM clock capped, thermal violation time grows",
    "nvlink-errors": "NVLink replay/recovery/CRC counters grow on a few links; XID 74",
    "load-anomaly": "load leaves its daily pattern: pinned at ~0.02; temperature and power follow (drill it "
                    "on the fleet's last node, which never hosts jobs: a job GPU's learned band spans its idle stretches)",
    "nvml-hang": "every NVML call on the GPU blocks for `seconds` (default 30): a stuck driver",
    "disk-failing": "disk `disk` (default 0) of the node fails: pending and offline-uncorrectable sectors "
                    "(ATA) or media errors (NVMe) grow in its SMART data",
    "job-hang": "the simulated job holding the GPU hangs: every GPU of the job at 0 % utilization, its "
                "processes and memory kept, until cleared or the job ends",
}
NODE_FAULTS = frozenset({"node-down"})  # the node's scrape target goes away
DISK_FAULTS = frozenset({"disk-failing"})  # a disk of the node, seen by the node health exporter
JOB_FAULTS = frozenset({"job-hang"})  # the simulated job on the GPU (exporters.sim.jobs), not the GPU itself
_INT_PARAMS = {"count": (1, 100_000), "xid": (1, 100_000), "seconds": (0, 3600), "disk": (0, 63)}


def per_gpu(name: str) -> bool:
    """Whether fault `name` hits one GPU (False: the whole node or one of its disks; it has no `gpu`)."""
    return name not in NODE_FAULTS and name not in DISK_FAULTS


def per_job(name: str) -> bool:
    """Whether fault `name` hits the job holding the GPU it names (its alerts carry `job_id`, not `gpu`)."""
    return name in JOB_FAULTS

# NVML recovery actions (field 230)
RECOVERY_NONE, RECOVERY_GPU_RESET, RECOVERY_NODE_REBOOT = 0, 1, 2


class FaultError(ValueError):
    """A fault request that cannot be honoured (unknown fault, node, GPU or a bad parameter)."""


@dataclass(frozen=True)
class Fault:
    """One active fault: what, where, since when (Unix time), and its extra parameters."""

    fault: str
    node: str
    gpu: int | None
    since: float
    params: dict[str, int] = field(default_factory=dict)
    job_id: str | None = None  # a job fault's job (set by the job schedule when it accepts the fault)

    def to_json(self) -> dict[str, Any]:
        job = {} if self.job_id is None else {"job_id": self.job_id}
        return {"fault": self.fault, "node": self.node, "gpu": self.gpu, "since": round(self.since, 3),
                **job, **self.params}


def parse_fault(body: Any, nodes: dict[str, int], now: float | None = None) -> Fault:
    """Validate a chaos request body against the fleet (`nodes`: name -> GPU count); raise FaultError."""
    if not isinstance(body, dict):
        raise FaultError("body must be a JSON object like {\"fault\": \"xid79\", \"node\": \"node-1\", \"gpu\": 0}")
    name = body.get("fault")
    if not isinstance(name, str) or name not in FAULTS:
        raise FaultError(f"unknown fault {str(name)[:60]!r}; known: {', '.join(FAULTS)}")
    node = body.get("node")
    if not isinstance(node, str) or node not in nodes:
        raise FaultError(f"unknown node {str(node)[:60]!r}; the fleet has node-1 .. node-{len(nodes)}")
    gpu = body.get("gpu", 0)
    if not per_gpu(name):
        gpu = None
    elif isinstance(gpu, bool) or not isinstance(gpu, int) or not 0 <= gpu < nodes[node]:
        raise FaultError(f"gpu must be an integer index 0..{nodes[node] - 1} on {node}, got {gpu!r}")
    params: dict[str, int] = {}
    for key, (low, high) in _INT_PARAMS.items():
        if key in body:
            value = body[key]
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
                raise FaultError(f"{key} must be an integer in {low}..{high}, got {value!r}")
            params[key] = value
    return Fault(name, node, gpu, time.time() if now is None else now, params)


@dataclass
class GpuState:
    """What persists on one simulated GPU between NVML calls (guarded by the node simulator's lock)."""

    ecc_corrected_volatile: float = 0.0
    ecc_corrected_aggregate: float = 0.0
    ecc_uncorrected_volatile: int = 0
    ecc_uncorrected_aggregate: int = 0
    remapped_corrected: int = 0
    remapped_uncorrected: int = 0
    remap_pending: int = 0
    remap_failure: int = 0
    recovery_action: int = RECOVERY_NONE
    pcie_replays: int = 0
    energy_mj: float = 0.0
    thermal_violation_ns: float = 0.0
    nvlink_errors: dict[tuple[int, int], float] = field(default_factory=dict)  # (link, counter) -> count
    faults: dict[str, Fault] = field(default_factory=dict)
    last_tick: float | None = None

    def has(self, name: str) -> bool:
        return name in self.faults


# event types (pynvml's nvmlEventType* values) delivered with each XID
EVENT_XID = 0x8
EVENT_DBE = 0x2
EVENT_SBE = 0x1


def inject(state: GpuState, fault: Fault) -> list[tuple[int, int]]:
    """Apply the one-shot effects of `fault` to `state`; return the (eventType, xid) events to deliver."""
    state.faults[fault.fault] = fault
    name = fault.fault
    if name == "xid79":
        return [(EVENT_XID, 79)]
    if name == "ecc-dbe":
        state.ecc_uncorrected_volatile += 2
        state.ecc_uncorrected_aggregate += 2
        state.remapped_uncorrected += 1
        state.remap_pending = 1
        state.recovery_action = RECOVERY_GPU_RESET
        return [(EVENT_DBE, 48), (EVENT_XID, 48)]
    if name == "ecc-storm":
        return [(EVENT_SBE, 92), (EVENT_XID, 92), (EVENT_XID, 94)]
    if name == "row-remap-failure":
        state.remap_failure = 1
        state.remap_pending = 1
        state.recovery_action = RECOVERY_NODE_REBOOT
        return [(EVENT_XID, 64)]
    if name == "xid-burst":
        return [(EVENT_XID, fault.params.get("xid", 13))] * fault.params.get("count", 13)
    if name == "nvlink-errors":
        return [(EVENT_XID, 74)]
    return []


NVLINK_FAULTY_LINKS = (0, 5, 11)
ECC_STORM_RATE_PER_S = 50.0
NVLINK_ERROR_RATE_PER_S = 20.0


def advance(state: GpuState, now: float, power_w: float) -> None:
    """Integrate the continuous effects (energy, growing error counts, violation time) up to `now`."""
    if state.last_tick is None:
        state.last_tick = now
        return
    dt = max(0.0, now - state.last_tick)
    state.last_tick = now
    state.energy_mj += power_w * dt * 1000.0
    if state.has("ecc-storm"):
        state.ecc_corrected_volatile += ECC_STORM_RATE_PER_S * dt
        state.ecc_corrected_aggregate += ECC_STORM_RATE_PER_S * dt
    if state.has("overheat") or state.has("thermal-throttle"):
        state.thermal_violation_ns += dt * 1e9
    if state.has("nvlink-errors"):
        for link in NVLINK_FAULTY_LINKS:
            for counter in range(4):  # replay, recovery, CRC flit, CRC data
                key = (link, counter)
                state.nvlink_errors[key] = state.nvlink_errors.get(key, 0.0) + NVLINK_ERROR_RATE_PER_S * dt


def reset_gpu(state: GpuState) -> int:
    """Clear all faults of the GPU as a GPU reset does; return how many were cleared."""
    cleared = len(state.faults)
    state.faults.clear()
    state.ecc_corrected_volatile = 0.0
    state.ecc_uncorrected_volatile = 0
    state.remap_pending = 0
    state.remap_failure = 0
    state.recovery_action = RECOVERY_NONE
    return cleared
