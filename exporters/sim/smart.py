"""Simulated `smartctl --json` output for a fleet of disks, healthy or degrading over time.

Everything is a pure function of (disk, time, fault), so the same code serves the live exporter
(`vigil exporter node --simulate`) and an AIOps engineer generating SMART *history*:

    from vigil.exporters.sim.smart import SimDisk, DiskFault, smart_document
    disk = SimDisk("node-3", 1)                       # index 0, 2, 4 ... are ATA, odd indexes NVMe
    fault = DiskFault("reallocation", start=t0)       # or pending_burst, uncorrectable, timeout, nvme_media_errors
    doc = smart_document(disk, t0 + 5 * 86400, fault) # the smartctl --json -a document five days in

Faults injected through the simulated fleet's chaos API (`disk-failing`, `vigil chaos inject`) reach
the exporter through `ChaosDiskFaults`, which reads GET /chaos at each scan: a disk failing fast
(`chaos_disk_fault`), so that the drill's alert fires within seconds of the injection.

It also acts as a fake `smartctl` for tests (`python -m vigil.exporters.sim.smart --disks 4 --json -a /dev/sdb`),
answering `--scan-open --json` and `--json -a DEV` like the real binary.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass
from typing import Callable

import requests

from vigil.exporters.sim.faults import DISK_FAULTS
from vigil.exporters.sim.load import _unit_hash

DAY_S = 86_400.0
CHAOS_RATE_PER_DAY = 1440.0  # a chaos-injected disk loses about a sector a minute
CHAOS_HEAD_START_S = 3600.0  # ... and has been failing for an hour already: about 60 bad sectors at once
FAULT_KINDS = ("reallocation", "pending_burst", "uncorrectable", "timeout", "nvme_media_errors")
_INSTALLED = 1_640_000_000.0  # the simulated fleet went into service in Dec 2021


@dataclass(frozen=True)
class SimDisk:
    """A simulated disk: even indexes are SATA SSDs behind /dev/sdX, odd ones NVMe drives."""

    node: str
    index: int

    @property
    def nvme(self) -> bool:
        return self.index % 2 == 1

    @property
    def device(self) -> str:
        return f"/dev/nvme{self.index // 2}" if self.nvme else f"/dev/sd{chr(ord('a') + self.index // 2)}"

    @property
    def serial(self) -> str:
        return f"SIM{int(_unit_hash(self.node, self.index, 'serial') * 1e10):010d}"

    @property
    def model(self) -> str:
        return "SIM NVMe 3.84TB" if self.nvme else "SIM SATA SSD 1.92TB"


@dataclass(frozen=True)
class DiskFault:
    """A degradation that starts at Unix time `start` and grows by `rate` per day, accelerating."""

    kind: str
    start: float
    rate: float = 4.0

    def __post_init__(self):
        if self.kind not in FAULT_KINDS:
            raise ValueError(f"fault kind must be one of {FAULT_KINDS}, got {self.kind!r}")

    def amount(self, t: float) -> int:
        """How far the fault has progressed at `t`: 0 before `start`, then rate*d + rate*d^2/4 (d in days)."""
        days = max(0.0, (t - self.start) / DAY_S)
        return int(self.rate * days + self.rate * days * days / 4)


def _growth(fault: DiskFault | None, kind: str, t: float, share: float = 1.0) -> int:
    return int(fault.amount(t) * share) if fault is not None and fault.kind == kind else 0


def smart_document(disk: SimDisk, t: float, fault: DiskFault | None = None) -> dict:
    """The `smartctl --json -a DEV` document of `disk` at Unix time `t` under `fault` (None: healthy)."""
    hours = int(max(0.0, t - _INSTALLED) / 3600)
    temp = 30 + int(10 * _unit_hash(disk.node, disk.index, "temp")) + int(3 * _unit_hash(disk.node, disk.index, int(t // 300)))
    base = {
        "json_format_version": [1, 0],
        "smartctl": {"version": [7, 3], "exit_status": 0},
        "device": {"name": disk.device, "info_name": disk.device, "type": "nvme" if disk.nvme else "sat",
                   "protocol": "NVMe" if disk.nvme else "ATA"},
        "model_name": disk.model,
        "serial_number": disk.serial,
        "temperature": {"current": temp},
        "power_on_time": {"hours": hours},
    }
    if disk.nvme:
        media = _growth(fault, "nvme_media_errors", t)
        spare = max(0, 100 - media // 10)
        warning = 0x1 if spare < 10 else 0
        warning |= 0x4 if media >= 100 else 0  # "NVM subsystem reliability degraded"
        base["nvme_smart_health_information_log"] = {
            "critical_warning": warning, "temperature": temp, "available_spare": spare,
            "available_spare_threshold": 10, "percentage_used": 2, "media_errors": media,
            "num_err_log_entries": media, "power_on_hours": hours, "unsafe_shutdowns": 3,
        }
        base["smart_status"] = {"passed": warning == 0, "nvme": {"value": warning}}
        if warning:
            base["smartctl"]["exit_status"] = 0x8
        return base
    realloc = _growth(fault, "reallocation", t)
    pending = _growth(fault, "pending_burst", t) + _growth(fault, "reallocation", t, 0.1)
    offline = _growth(fault, "pending_burst", t, 0.5) + _growth(fault, "uncorrectable", t, 0.5)
    reported = _growth(fault, "uncorrectable", t) + _growth(fault, "reallocation", t, 0.05)
    timeouts = _growth(fault, "timeout", t)
    realloc_value = max(1, 100 - realloc // 20)  # normalized: fails at threshold 10 after ~1800 sectors
    table = [
        _attr(5, "Reallocated_Sector_Ct", realloc_value, 10, realloc),
        _attr(9, "Power_On_Hours", 99, 0, hours),
        _attr(187, "Reported_Uncorrect", max(1, 100 - reported), 0, reported),
        _attr(188, "Command_Timeout", 100, 0, timeouts),
        _temperature_attr(disk, temp),
        _attr(197, "Current_Pending_Sector", 100, 0, pending),
        _attr(198, "Offline_Uncorrectable", 100, 0, offline),
    ]
    base["ata_smart_attributes"] = {"revision": 16, "table": table}
    base["smart_status"] = {"passed": realloc_value > 10}
    if realloc_value <= 10:
        base["smartctl"]["exit_status"] = 0x8 | 0x10
    return base


def _attr(attr_id: int, name: str, value: int, thresh: int, raw: int, string: str | None = None) -> dict:
    return {"id": attr_id, "name": name, "value": value, "worst": value, "thresh": thresh,
            "raw": {"value": raw, "string": str(raw) if string is None else string}}


def _temperature_attr(disk: SimDisk, temp: int) -> dict:
    """194 as real disks report it (smartctl's `tempminmax`): the current temperature in the low word and
    the lifetime minimum and maximum packed above it, so the exporter's decoding is exercised."""
    low = 18 + int(6 * _unit_hash(disk.node, disk.index, "tmin"))
    high = 43 + int(10 * _unit_hash(disk.node, disk.index, "tmax"))  # above any simulated reading (<= 42)
    raw = temp | (low << 16) | (high << 32)
    return _attr(194, "Temperature_Celsius", 100 - temp, 0, raw, f"{temp} (Min/Max {low}/{high})")


def scan_document(disks: list[SimDisk]) -> dict:
    """The `smartctl --scan-open --json` document for `disks`."""
    return {"json_format_version": [1, 0], "smartctl": {"version": [7, 3], "exit_status": 0},
            "devices": [{"name": d.device, "info_name": d.device, "type": "nvme" if d.nvme else "sat",
                         "protocol": "NVMe" if d.nvme else "ATA"} for d in disks]}


def chaos_disk_fault(disk: SimDisk, since: float) -> DiskFault:
    """The degradation of a `disk-failing` fault injected at `since`: pending and offline-uncorrectable
    sectors on an ATA disk, media errors on an NVMe one, already visible and growing by the minute."""
    kind = "nvme_media_errors" if disk.nvme else "pending_burst"
    return DiskFault(kind, since - CHAOS_HEAD_START_S, CHAOS_RATE_PER_DAY)


def disk_faults_from_chaos(body: dict, node: str) -> dict[int, DiskFault]:
    """The disk faults of `node` in a GET /chaos body of the fleet's chaos API, by disk index."""
    faults = {}
    for fault in body.get("faults", []):
        if fault.get("fault") in DISK_FAULTS and fault.get("node") == node:
            index = int(fault.get("disk", 0))
            faults[index] = chaos_disk_fault(SimDisk(node, index), float(fault["since"]))
    return faults


class ChaosDiskFaults:
    """Reads the disk faults of `node` from the chaos API at `url`; keeps the last answer while it is down."""

    def __init__(self, url: str, node: str, timeout: float = 2.0):
        self.url = url.rstrip("/") + "/chaos"
        self.node = node
        self.timeout = timeout
        self._last: dict[int, DiskFault] = {}

    def __call__(self) -> dict[int, DiskFault]:
        try:
            response = requests.get(self.url, timeout=self.timeout)
            response.raise_for_status()
            self._last = disk_faults_from_chaos(response.json(), self.node)
        except (requests.RequestException, ValueError, KeyError, TypeError):
            pass  # the fleet restarting must not heal or break the disks: serve the last known faults
        return self._last


class SimulatedSmartctl:
    """A smartctl runner (argv -> JSON) over simulated disks; `faults` maps disk index -> DiskFault.

    `chaos` (e.g. `ChaosDiskFaults`) is asked at each scan for injected faults, which win over `faults`."""

    def __init__(self, node: str, disks: int, faults: dict[int, DiskFault] | None = None, clock=time.time,
                 chaos: Callable[[], dict[int, DiskFault]] | None = None):
        if disks < 0:
            raise ValueError("disks must be >= 0")
        self.disks = [SimDisk(node, i) for i in range(disks)]
        self.faults = dict(faults or {})
        self._clock = clock
        self._chaos = chaos
        self._injected: dict[int, DiskFault] = {}

    def __call__(self, args: list[str]) -> dict:
        if "--scan-open" in args or "--scan" in args:
            if self._chaos is not None:
                self._injected = self._chaos()
            return scan_document(self.disks)
        device = args[-1]
        for disk in self.disks:
            if disk.device == device:
                fault = self._injected.get(disk.index) or self.faults.get(disk.index)
                return smart_document(disk, self._clock(), fault)
        return {"smartctl": {"exit_status": 2, "messages": [
            {"string": f"{device}: No such device", "severity": "error"}]}}


def main(argv: list[str] | None = None) -> int:
    """Fake smartctl: prints what the real one would for the simulated disks, with its exit status."""
    parser = argparse.ArgumentParser(description="Simulated smartctl (JSON output only).")
    parser.add_argument("--node", default="sim-node")
    parser.add_argument("--disks", type=int, default=4)
    parser.add_argument("--time", type=float, default=None, help="Unix time to simulate (default: now)")
    parser.add_argument("--fault", action="append", default=[], metavar="INDEX:KIND:START",
                        help="degrade disk INDEX with KIND from Unix time START")
    known, smartctl_args = parser.parse_known_args(argv)
    faults = {}
    for spec in known.fault:
        index, kind, start = spec.split(":")
        faults[int(index)] = DiskFault(kind, float(start))
    clock = (lambda: known.time) if known.time is not None else time.time
    doc = SimulatedSmartctl(known.node, known.disks, faults, clock)(smartctl_args)
    json.dump(doc, sys.stdout, indent=1)
    return int(doc["smartctl"]["exit_status"])


if __name__ == "__main__":
    sys.exit(main())
