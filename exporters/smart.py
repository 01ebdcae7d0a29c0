"""Disk health from `smartctl --json`: device scan, per-device read, and parsing into `DiskHealth`.

`SmartReader.read()` runs `smartctl --scan-open --json`, then `smartctl --json -a DEV` for every device,
through a `runner` (argv -> parsed JSON). The default runner executes the real binary; the simulator
(`exporters.sim.smart.SimulatedSmartctl`) is a runner too, so the same parsing code runs either way.

smartctl needs root (or, on some distributions, membership of the `disk` group with raw-I/O capability)
to open block devices; without it the scan finds devices but every read fails, which shows as
`vigil_disk_smart_read_ok 0`, not as a crash.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from dataclasses import dataclass, field
from typing import Callable

from vigil.exporters.smart_raw import SmartAttribute, decode

# ATA attributes that predict failure (5, 187, 188, 197, 198) and their context (194, 190, 9). Their raw
# values are decoded (`exporters.smart_raw`): vendors pack several fields into one 48-bit raw value.
ATA_ATTRIBUTES: dict[int, str] = {
    5: "reallocated_sector_count",
    9: "power_on_hours",
    187: "reported_uncorrectable",
    188: "command_timeout",
    190: "airflow_temperature_celsius",
    194: "temperature_celsius",
    197: "current_pending_sector",
    198: "offline_uncorrectable",
}
# smartctl's exit status is a bit mask: bits 0 and 1 mean "no usable output" (bad command line, device
# could not be opened); higher bits report disk problems alongside a complete JSON document.
_EXIT_UNUSABLE = 0b11

Runner = Callable[[list[str]], dict]


class SmartctlError(Exception):
    """smartctl could not be run or gave no usable JSON."""


@dataclass
class DiskHealth:
    """What one `smartctl --json -a` document says about a disk."""

    device: str
    protocol: str  # "ATA", "NVMe", "SCSI"
    model: str = ""
    serial: str = ""
    healthy: bool | None = None  # smart_status.passed; None when smartctl did not say
    temperature_celsius: float | None = None
    power_on_seconds: float | None = None
    attributes: dict[int, SmartAttribute] = field(default_factory=dict)  # id -> (name, value, raw, rule)
    nvme_critical_warning: int | None = None
    nvme_media_errors: int | None = None
    nvme_percentage_used: int | None = None  # percent of rated endurance used; may exceed 100
    nvme_available_spare: int | None = None  # percent of spare capacity left
    nvme_available_spare_threshold: int | None = None


@dataclass
class SmartSnapshot:
    """One pass over all disks: the readings, and the devices whose read failed (with why)."""

    disks: list[DiskHealth]
    failed: dict[str, str]


def subprocess_runner(smartctl: str = "smartctl", timeout: float = 30.0) -> Runner:
    """A runner that executes the real smartctl binary (found on PATH or given as a path).

    A missing binary is an error of each pass, not of construction, so the exporter still serves
    `vigil_smart_up 0` (something to alert on) and picks smartctl up once it is installed."""

    def run(args: list[str]) -> dict:
        binary = shutil.which(smartctl)
        if binary is None:
            raise SmartctlError(f"smartctl not found: {smartctl!r} (install smartmontools or pass --smartctl PATH)")
        try:
            proc = subprocess.run([binary, *args], capture_output=True, text=True, timeout=timeout, check=False)
        except subprocess.TimeoutExpired as exc:
            raise SmartctlError(f"smartctl {' '.join(args)} timed out after {timeout:g}s") from exc
        try:
            doc = json.loads(proc.stdout)
        except json.JSONDecodeError as exc:
            raise SmartctlError(f"smartctl {' '.join(args)} gave no JSON (exit {proc.returncode}): "
                                f"{proc.stderr.strip()[:200]}") from exc
        if proc.returncode & _EXIT_UNUSABLE:
            messages = "; ".join(m.get("string", "") for m in doc.get("smartctl", {}).get("messages", []))
            raise SmartctlError(f"smartctl {' '.join(args)} failed (exit {proc.returncode}): {messages}")
        return doc

    return run


def parse_scan(doc: dict) -> list[str]:
    """Device arguments from `smartctl --scan-open --json` (names such as /dev/sda, /dev/nvme0)."""
    return [d["name"] for d in doc.get("devices", []) if d.get("name")]


def parse_disk(doc: dict, device: str) -> DiskHealth:
    """A `smartctl --json -a DEV` document as a `DiskHealth`."""
    dev = doc.get("device", {})
    health = DiskHealth(
        device=dev.get("name", device),
        protocol=dev.get("protocol", ""),
        model=doc.get("model_name", "") or doc.get("scsi_model_name", ""),
        serial=doc.get("serial_number", ""),
    )
    status = doc.get("smart_status", {})
    if "passed" in status:
        health.healthy = bool(status["passed"])
    if "current" in doc.get("temperature", {}):
        health.temperature_celsius = float(doc["temperature"]["current"])
    if "hours" in doc.get("power_on_time", {}):
        health.power_on_seconds = float(doc["power_on_time"]["hours"]) * 3600 + \
            float(doc["power_on_time"].get("minutes", 0)) * 60
    for attr in doc.get("ata_smart_attributes", {}).get("table", []):
        if attr.get("id") in ATA_ATTRIBUTES and "raw" in attr:
            raw = int(attr["raw"]["value"])
            value, rule = decode(attr["id"], raw, attr["raw"].get("string"))
            health.attributes[attr["id"]] = SmartAttribute(ATA_ATTRIBUTES[attr["id"]], value, raw, rule)
    nvme = doc.get("nvme_smart_health_information_log")
    if nvme is not None:
        health.nvme_critical_warning = int(nvme.get("critical_warning", 0))
        health.nvme_media_errors = int(nvme.get("media_errors", 0))
        health.nvme_percentage_used = _optional_int(nvme, "percentage_used")
        health.nvme_available_spare = _optional_int(nvme, "available_spare")
        health.nvme_available_spare_threshold = _optional_int(nvme, "available_spare_threshold")
    return health


def _optional_int(section: dict, key: str) -> int | None:
    return int(section[key]) if key in section else None


class SmartReader:
    """Scans for disks and reads each one; one failing disk never hides the others."""

    def __init__(self, runner: Runner):
        self._run = runner

    def read(self) -> SmartSnapshot:
        devices = parse_scan(self._run(["--scan-open", "--json"]))
        disks, failed = [], {}
        for device in devices:
            try:
                disks.append(parse_disk(self._run(["--json", "-a", device]), device))
            except (SmartctlError, KeyError, TypeError, ValueError) as exc:
                failed[device] = str(exc)
        return SmartSnapshot(disks, failed)
