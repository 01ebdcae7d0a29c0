"""Node health collector: SMART disk health, InfiniBand ports and a heartbeat.

It complements node_exporter (CPU, memory, filesystems, network stay there): only signals that predict
hardware failure or prove the node is alive. SMART is read by `smartctl` in the background
(`exporters.background`, at most once per `interval`), because one pass over a dozen disks takes
seconds; scrapes serve the last snapshot. InfiniBand counters are sysfs reads done at scrape time.
"""

from __future__ import annotations

import time

from vigil.exporters.background import BackgroundSnapshot
from vigil.exporters.infiniband import read_ports
from vigil.exporters.metric_families import add, family
from vigil.exporters.smart import SmartReader, SmartSnapshot
from vigil.exporters.spec import MetricSpec

_SMART = "smartctl --json -a"
_IB = "/sys/class/infiniband"
_NVME = _SMART + " nvme_smart_health_information_log"
DISK = ("node", "device")
ATTRIBUTE = ("node", "device", "attribute_id", "attribute")
IB_PORT = ("node", "device", "port")

SPECS: list[MetricSpec] = [
    MetricSpec("vigil_node_heartbeat_timestamp_seconds", "gauge", "seconds", ("node",),
               "Unix time of this scrape; a stale or absent value means the node or exporter hangs.", "clock"),
    MetricSpec("vigil_smart_up", "gauge", "", ("node",),
               "1 when the last smartctl scan ran; 0 when smartctl is missing or failed.", "smartctl --scan-open --json"),
    MetricSpec("vigil_smart_last_success_timestamp_seconds", "gauge", "seconds", ("node",),
               "Unix time the last successful smartctl pass finished.", _SMART),
    MetricSpec("vigil_disk_smart_read_ok", "gauge", "", DISK,
               "1 when smartctl read the device; 0 when it failed (often: not root).", _SMART),
    MetricSpec("vigil_disk_smart_healthy", "gauge", "", ("node", "device", "model", "serial"),
               "SMART overall health self-assessment: 1 passed, 0 failed.", _SMART + " smart_status.passed"),
    MetricSpec("vigil_disk_smart_attribute_raw", "gauge", "", ATTRIBUTE,
               "True value of the failure-predicting ATA attributes 5, 187, 188, 197, 198 and context 194, 190, 9, "
               "decoded from the vendor-packed raw value (e.g. 188: lowest 16-bit field; 194: Celsius).",
               _SMART + " ata_smart_attributes[].raw, decoded (exporters/smart_raw.py)"),
    MetricSpec("vigil_disk_smart_attribute_raw_value", "gauge", "", ATTRIBUTE,
               "Undecoded 48-bit raw value of the same attributes, exactly as smartctl reports it.",
               _SMART + " ata_smart_attributes[].raw.value"),
    MetricSpec("vigil_disk_nvme_critical_warning", "gauge", "", DISK,
               "NVMe critical warning bit field (0 = none; bit 2 = reliability degraded).", _NVME),
    MetricSpec("vigil_disk_nvme_media_errors_total", "counter", "", DISK,
               "NVMe unrecovered data integrity errors.", _NVME),
    MetricSpec("vigil_disk_nvme_percentage_used_ratio", "gauge", "ratio", DISK,
               "Share of the NVMe disk's rated write endurance used (1 = rated life reached; can exceed 1).",
               _NVME + " percentage_used / 100"),
    MetricSpec("vigil_disk_nvme_available_spare_ratio", "gauge", "ratio", DISK,
               "Share of the NVMe disk's spare capacity still available (0-1).", _NVME + " available_spare / 100"),
    MetricSpec("vigil_disk_nvme_available_spare_threshold_ratio", "gauge", "ratio", DISK,
               "Available spare below which the disk sets critical warning bit 0 (0-1).",
               _NVME + " available_spare_threshold / 100"),
    MetricSpec("vigil_disk_temperature_celsius", "gauge", "celsius", DISK, "Drive temperature.",
               _SMART + " temperature.current"),
    MetricSpec("vigil_disk_power_on_seconds", "gauge", "seconds", DISK, "Power-on time (smartctl reports hours).",
               _SMART + " power_on_time"),
    MetricSpec("vigil_infiniband_port_up", "gauge", "", IB_PORT,
               "1 when the port state is ACTIVE and the physical state LinkUp.", _IB + "/*/ports/*/state"),
    MetricSpec("vigil_infiniband_port_errors_total", "counter", "", IB_PORT + ("counter",),
               "InfiniBand port error counters (symbol_error, link_downed, port_rcv_errors, ...).",
               _IB + "/*/ports/*/counters/"),
]
_BY_NAME = {s.name: s for s in SPECS}


class NodeHealthCollector:
    """Collects SMART (via `smart`, None to skip), InfiniBand ports under `sysfs_root` and a heartbeat."""

    def __init__(self, node: str, smart: SmartReader | None, sysfs_root: str = "/sys", interval: float = 60.0,
                 first_wait: float = 10.0, clock=time.time):
        self.node = node
        self.sysfs_root = sysfs_root
        self._clock = clock
        self._last_success: float | None = None
        self._smart = None if smart is None else BackgroundSnapshot(self._read_smart(smart), interval, wait=0.0,
                                                                     first_wait=first_wait)

    def _read_smart(self, smart: SmartReader):
        def read() -> SmartSnapshot:
            snapshot = smart.read()
            self._last_success = self._clock()
            return snapshot
        return read

    def smart_error(self) -> str | None:
        """Why the last SMART pass failed (None when it worked or SMART is off)."""
        snap = self._smart.get() if self._smart else None
        return snap.error if snap is not None else None

    def collect(self):
        fams = {s.name: family(s) for s in SPECS}
        node = {"node": self.node}
        add(fams["vigil_node_heartbeat_timestamp_seconds"], _BY_NAME["vigil_node_heartbeat_timestamp_seconds"],
            node, self._clock())
        if self._smart is not None:
            snap = self._smart.get()
            add(fams["vigil_smart_up"], _BY_NAME["vigil_smart_up"], node, 1.0 if snap is not None and snap.ok else 0.0)
            if self._last_success is not None:
                add(fams["vigil_smart_last_success_timestamp_seconds"],
                    _BY_NAME["vigil_smart_last_success_timestamp_seconds"], node, self._last_success)
            if snap is not None and snap.ok:
                self._add_disks(fams, snap.value)
        for port in read_ports(self.sysfs_root):
            labels = {**node, "device": port.device, "port": port.port}
            add(fams["vigil_infiniband_port_up"], _BY_NAME["vigil_infiniband_port_up"], labels, float(port.up))
            for counter, value in port.errors.items():
                add(fams["vigil_infiniband_port_errors_total"], _BY_NAME["vigil_infiniband_port_errors_total"],
                    {**labels, "counter": counter}, value)
        yield from (fam for fam in fams.values() if fam.samples)

    def _add_disks(self, fams, snapshot: SmartSnapshot) -> None:
        def put(name, labels, value):
            if value is not None:
                add(fams[name], _BY_NAME[name], labels, float(value))

        for device in snapshot.failed:
            put("vigil_disk_smart_read_ok", {"node": self.node, "device": device}, 0)
        for disk in snapshot.disks:
            labels = {"node": self.node, "device": disk.device}
            put("vigil_disk_smart_read_ok", labels, 1)
            put("vigil_disk_smart_healthy", {**labels, "model": disk.model, "serial": disk.serial},
                None if disk.healthy is None else int(disk.healthy))
            for attr_id, attr in sorted(disk.attributes.items()):
                attr_labels = {**labels, "attribute_id": str(attr_id), "attribute": attr.name}
                put("vigil_disk_smart_attribute_raw", attr_labels, attr.value)
                put("vigil_disk_smart_attribute_raw_value", attr_labels, attr.raw)
            put("vigil_disk_nvme_critical_warning", labels, disk.nvme_critical_warning)
            put("vigil_disk_nvme_media_errors_total", labels, disk.nvme_media_errors)
            put("vigil_disk_nvme_percentage_used_ratio", labels, _percent(disk.nvme_percentage_used))
            put("vigil_disk_nvme_available_spare_ratio", labels, _percent(disk.nvme_available_spare))
            put("vigil_disk_nvme_available_spare_threshold_ratio", labels, _percent(disk.nvme_available_spare_threshold))
            put("vigil_disk_temperature_celsius", labels, disk.temperature_celsius)
            put("vigil_disk_power_on_seconds", labels, disk.power_on_seconds)


def _percent(value: int | None) -> float | None:
    return None if value is None else value / 100.0
