"""Read a dcgm-exporter page and publish it under vigil's GPU metric names, labels and base units.

`DcgmCollector(url, node=None, timeout=2.0)` is what `vigil exporter gpu --backend dcgm --dcgm-url URL`
registers. It accepts both dcgm-exporter naming schemes (see `exporters.dcgm_fields`), drops DCGM's
blank sentinels and MIG-instance series, and carries over the profiling fields that NVML lacks.

Why a background refresh: dcgm-exporter can be slow (users report scrape timeouts) and `requests`'
timeout bounds each socket operation, not the whole read. So the page is fetched in a daemon thread
(`exporters.background`), started by a scrape when the last page is older than `max_age`; the scrape
waits for it at most `timeout` seconds, so a quick exporter is served fresh and a slow one cannot hold
our `/metrics` longer than that. When the page cannot be read, or the last good page is older than
`max_age + 3 * timeout` (a read that trickles on), `dcgm_up` is 0 and no stale GPU values are served.
"""

from __future__ import annotations

import socket
import time
from dataclasses import dataclass, field

import requests
from prometheus_client.parser import text_string_to_metric_families

from vigil.exporters.background import BackgroundSnapshot
from vigil.exporters.dcgm_fields import (
    CLOCK_EVENT_BITS,
    CLOCK_EVENT_FIELDS,
    DRIVER_LABELS,
    FIELD_MAPS,
    HOSTNAME_LABELS,
    MIG_INSTANCE_LABEL,
    TO_BASE_UNIT,
    field_index,
    is_blank,
)
from vigil.exporters.metric_families import add, family
from vigil.exporters.spec import MetricSpec

GPU_LABELS = ("node", "gpu", "uuid")
_SRC = "dcgm-exporter /metrics"


def _spec(name, type_, unit, help_, extra=()) -> MetricSpec:
    return MetricSpec(name, type_, unit, GPU_LABELS + tuple(extra), help_, _SRC)


SPECS: list[MetricSpec] = [
    MetricSpec("dcgm_up", "gauge", "", ("node",), "1 when the dcgm-exporter page was read and parsed, else 0.", _SRC),
    _spec("vigil_gpu_up", "gauge", "", "1 for every GPU present on the dcgm-exporter page."),
    MetricSpec("vigil_gpu_info", "info", "", ("node", "gpu", "uuid", "name", "driver", "cuda", "pci_bus_id", "serial"),
               "GPU identity; cuda and serial are empty because dcgm-exporter does not label them.", _SRC),
    _spec("vigil_gpu_utilization_ratio", "gauge", "ratio", "Fraction of time a kernel ran on the GPU (0-1)."),
    _spec("vigil_gpu_memory_utilization_ratio", "gauge", "ratio", "Fraction of time device memory was read or written (0-1)."),
    _spec("vigil_gpu_memory_used_bytes", "gauge", "bytes", "Framebuffer memory in use."),
    _spec("vigil_gpu_memory_free_bytes", "gauge", "bytes", "Framebuffer memory free."),
    _spec("vigil_gpu_memory_total_bytes", "gauge", "bytes", "Framebuffer capacity (pre-4.9: free + used + reserved)."),
    _spec("vigil_gpu_memory_reserved_bytes", "gauge", "bytes", "Framebuffer memory reserved by the driver."),
    _spec("vigil_gpu_temperature_celsius", "gauge", "celsius", "GPU die or HBM temperature.", ("sensor",)),
    _spec("vigil_gpu_power_watts", "gauge", "watts", "Board power draw."),
    _spec("vigil_gpu_power_limit_watts", "gauge", "watts", "Power management limit."),
    _spec("vigil_gpu_energy_joules_total", "counter", "joules", "Energy consumed since the driver loaded."),
    _spec("vigil_gpu_clock_hertz", "gauge", "hertz", "Current clock frequency.", ("clock",)),
    _spec("vigil_gpu_fan_speed_ratio", "gauge", "ratio", "Fan speed as a fraction of maximum."),
    _spec("vigil_gpu_performance_state", "gauge", "", "Performance state (0 = P0, fastest)."),
    _spec("vigil_gpu_ecc_errors_total", "counter", "", "ECC errors.", ("error_type", "counter_type")),
    _spec("vigil_gpu_retired_pages_total", "counter", "", "Retired memory pages (pre-Ampere).", ("cause",)),
    _spec("vigil_gpu_retired_pages_pending", "gauge", "", "Pages waiting for retirement at the next reset."),
    _spec("vigil_gpu_remapped_rows_total", "counter", "", "Remapped HBM rows (Ampere+).", ("error_type",)),
    _spec("vigil_gpu_remap_pending", "gauge", "", "1 when a row remap waits for a GPU reset."),
    _spec("vigil_gpu_remap_failure", "gauge", "", "1 when row remapping has failed (replace the GPU)."),
    _spec("vigil_gpu_pcie_replays_total", "counter", "", "PCIe replays (link-level retries)."),
    _spec("vigil_gpu_nvlink_errors_total", "counter", "", "NVLink errors; DCGM sums links, so link=\"all\".",
          ("link", "error_type")),
    _spec("vigil_gpu_clock_event_active", "gauge", "", "1 while a clock-event (throttle) reason holds clocks down.",
          ("reason",)),
    _spec("vigil_gpu_clock_event_seconds_total", "counter", "seconds", "Time clocks were held down, by reason.",
          ("reason",)),
    _spec("vigil_gpu_last_xid_code", "gauge", "", "Last XID DCGM saw (0 = none). A gauge: repeats are invisible; "
          "vigil_gpu_xid_errors_total needs the NVML backend."),
    _spec("vigil_gpu_graphics_engine_active_ratio", "gauge", "ratio", "Fraction of time the graphics/compute engine was active."),
    _spec("vigil_gpu_sm_active_ratio", "gauge", "ratio", "Fraction of time at least one warp was resident, averaged over SMs."),
    _spec("vigil_gpu_sm_occupancy_ratio", "gauge", "ratio", "Resident warps relative to the SM maximum."),
    _spec("vigil_gpu_tensor_pipe_active_ratio", "gauge", "ratio", "Fraction of cycles the tensor pipe was active."),
    _spec("vigil_gpu_dram_active_ratio", "gauge", "ratio", "Fraction of cycles the memory interface was busy."),
]
_SPEC_BY_NAME = {s.name: s for s in SPECS}
assert {r.metric for r in FIELD_MAPS} <= set(_SPEC_BY_NAME), "every mapped field needs a spec"


@dataclass
class GpuReading:
    """What one dcgm-exporter page says about one GPU, already in vigil's names and units."""

    gpu: str
    uuid: str
    info: dict[str, str]
    values: dict[tuple[str, tuple[tuple[str, str], ...]], float] = field(default_factory=dict)


@dataclass
class Page:
    hostname: str | None
    gpus: dict[str, GpuReading]


def parse_page(text: str) -> Page:
    """Normalize a dcgm-exporter exposition page (either naming scheme). Raises ValueError if malformed."""
    index = field_index()
    gpus: dict[str, GpuReading] = {}
    hostname = None
    for fam in text_string_to_metric_families(text):
        for sample in fam.samples:
            labels, value = sample.labels, sample.value
            # The parser appends "_total" to counter samples whose name lacks it (DCGM's upper-case
            # "..._TOTAL" names included), so the family name is the field name as written.
            name = sample.name if sample.name in index else fam.name
            known = name in index or name in CLOCK_EVENT_FIELDS
            if not known or "UUID" not in labels or labels.get(MIG_INSTANCE_LABEL) or is_blank(value):
                continue
            uuid = labels["UUID"]
            reading = gpus.get(uuid)
            if reading is None:
                reading = gpus[uuid] = GpuReading(labels.get("gpu", ""), uuid, _info_labels(labels))
            hostname = hostname or next((labels[k] for k in HOSTNAME_LABELS if labels.get(k)), None)
            if name in CLOCK_EVENT_FIELDS:
                for bit, reason in CLOCK_EVENT_BITS:
                    reading.values.setdefault(("vigil_gpu_clock_event_active", (("reason", reason),)),
                                              1.0 if int(value) & bit else 0.0)
                continue
            row, unit = index[name]
            # setdefault: a page carrying both names of one field keeps the first value.
            reading.values.setdefault((row.metric, row.labels), TO_BASE_UNIT[unit](value))
    for reading in gpus.values():
        _derive_total_memory(reading.values)
    return Page(hostname, gpus)


def _info_labels(labels: dict[str, str]) -> dict[str, str]:
    return {
        "name": labels.get("modelName", ""),
        "driver": next((labels[k] for k in DRIVER_LABELS if labels.get(k)), ""),
        "cuda": "",
        "pci_bus_id": labels.get("pci_bus_id", ""),
        "serial": labels.get("DCGM_FI_DEV_SERIAL", ""),
    }


def _derive_total_memory(values: dict) -> None:
    """Pre-4.9 default pages have no capacity field: free + used + reserved is the framebuffer size."""
    key = ("vigil_gpu_memory_total_bytes", ())
    parts = [values.get((m, ())) for m in ("vigil_gpu_memory_free_bytes", "vigil_gpu_memory_used_bytes",
                                           "vigil_gpu_memory_reserved_bytes")]
    if key not in values and all(p is not None for p in parts):
        values[key] = sum(parts)


class DcgmCollector:
    """A prometheus_client collector that republishes a dcgm-exporter page as vigil GPU metrics."""

    def __init__(self, url: str, node: str | None = None, timeout: float = 2.0, max_age: float = 5.0):
        if not url.startswith(("http://", "https://")):
            raise ValueError(f"dcgm-exporter URL must start with http:// or https://, got {url!r}")
        if timeout <= 0:
            raise ValueError("timeout must be > 0 seconds")
        self.url = url
        self.node = node
        self.timeout = timeout
        self._session = requests.Session()
        self._stale_after = max_age + 3 * timeout
        self._snapshot = BackgroundSnapshot(self._fetch, max_age=max_age, wait=timeout)

    def _fetch(self) -> Page:
        response = self._session.get(self.url, timeout=self.timeout)
        response.raise_for_status()
        return parse_page(response.text)

    def last_error(self) -> str | None:
        snap = self._snapshot.get()
        return "no page read yet" if snap is None else snap.error

    def collect(self):
        snap = self._snapshot.get()
        fresh = snap is not None and snap.ok and time.monotonic() - snap.completed_at <= self._stale_after
        page = snap.value if fresh else None
        node = self.node or (page.hostname if page else None) or socket.gethostname()
        families = {s.name: family(s) for s in SPECS}
        add(families["dcgm_up"], _SPEC_BY_NAME["dcgm_up"], {"node": node}, 1.0 if page else 0.0)
        for reading in (page.gpus.values() if page else ()):
            base = {"node": node, "gpu": reading.gpu, "uuid": reading.uuid}
            add(families["vigil_gpu_up"], _SPEC_BY_NAME["vigil_gpu_up"], base)
            add(families["vigil_gpu_info"], _SPEC_BY_NAME["vigil_gpu_info"], {**base, **reading.info})
            for (metric, extra), value in sorted(reading.values.items()):
                add(families[metric], _SPEC_BY_NAME[metric], {**base, **dict(extra)}, value)
        yield from (fam for fam in families.values() if fam.samples or fam.name == "dcgm_up")

