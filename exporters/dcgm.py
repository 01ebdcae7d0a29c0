"""Read a dcgm-exporter page and publish it under vigil's GPU metric names, labels and base units.

`DcgmCollector(url, node=None, timeout=2.0, max_age=5.0, expected_gpus=None)` is what
`vigil exporter gpu --backend dcgm --dcgm-url URL` registers. Reading and normalizing the page is
`exporters.dcgm_source`; this module decides what the node's GPUs look like from it, with the same
health series as the NVML backend: `vigil_gpu_up`, `vigil_node_gpus_visible` against
`vigil_node_gpus_expected` (so `GpuMissing` fires when GPUs vanish from the page), and the time of
the last good read in `vigil_exporter_last_collection_timestamp_seconds`.

Why a background refresh: dcgm-exporter can be slow or hang (users report scrape timeouts), so the
page is read in a daemon thread (`exporters.background`). `start()` runs that read in a loop every
`max_age` seconds, as the NVML collector does, and a scrape only serves the last result: a hung
dcgm-exporter never makes our `/metrics` wait. Without `start()` a scrape starts a read when the last
one is older than `max_age` and waits for it at most `timeout` seconds. `dcgm_up` is 1 only while the
last read worked, listed at least one GPU and is younger than `max_age + 3 * timeout`; otherwise no
per-GPU values are served (stale values would look healthy) and `vigil_exporter_dcgm_errors_total`
says why.
"""

from __future__ import annotations

import socket
import time
from dataclasses import replace
from typing import Callable

import requests

from vigil.exporters.background import BackgroundSnapshot
from vigil.exporters.dcgm_fields import FIELD_MAPS
from vigil.exporters.dcgm_source import REASONS, Page, PageError, parse_page, read_page
from vigil.exporters.gpu_isolation import StallGuard
from vigil.exporters.gpu_specs import PROFILING
from vigil.exporters.metric_families import add, family
from vigil.exporters.spec import MetricSpec

__all__ = ["SPECS", "DcgmCollector", "parse_page"]  # parse_page: for bench/exporters/dcgm_node.py

GPU_LABELS = ("node", "gpu", "uuid")
_SRC = "dcgm-exporter /metrics"


def _spec(name, type_, unit, help_, extra=()) -> MetricSpec:
    return MetricSpec(name, type_, unit, GPU_LABELS + tuple(extra), help_, _SRC)


def _node_spec(name, unit, help_) -> MetricSpec:
    return MetricSpec(name, "gauge", unit, ("node",), help_, "exporter")


SPECS: list[MetricSpec] = [
    MetricSpec("dcgm_up", "gauge", "", ("node",),
               "1 while the last read of the dcgm-exporter page worked, listed at least one GPU and is younger "
               "than --interval + 3 * --dcgm-timeout; else 0, and no per-GPU values are published.", _SRC),
    _spec("vigil_gpu_up", "gauge", "", "1 for every GPU on the page; 0 for a GPU seen on an earlier page that is "
          "missing from the current one (while dcgm_up is 1)."),
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
    *(replace(spec, source=_SRC) for spec in PROFILING),  # the NVML backend's profiling metrics, read from DCGM
    _node_spec("vigil_node_gpus_visible", "", "GPUs on the current dcgm-exporter page; 0 while dcgm_up is 0."),
    _node_spec("vigil_node_gpus_expected", "", "GPUs the node should have (--expected-gpus, else the most seen on "
               "one page since the exporter started)."),
    _node_spec("vigil_exporter_collection_duration_seconds", "seconds", "Duration of the last read of the page "
               "(good or failed)."),
    _node_spec("vigil_exporter_last_collection_timestamp_seconds", "seconds", "Unix time of the last good read of "
               "the page; stops advancing while dcgm-exporter is down, hung or empty."),
    MetricSpec("vigil_exporter_dcgm_errors_total", "counter", "", ("node", "reason"),
               "Failed reads of the page by reason: " + ", ".join(REASONS) + " (every reason from 0).", "exporter"),
]
_SPEC_BY_NAME = {s.name: s for s in SPECS}
assert {r.metric for r in FIELD_MAPS} <= set(_SPEC_BY_NAME), "every mapped field needs a spec"


class DcgmCollector:
    """A prometheus_client collector that republishes a dcgm-exporter page as vigil GPU metrics."""

    def __init__(self, url: str, node: str | None = None, timeout: float = 2.0, max_age: float = 5.0,
                 expected_gpus: int | None = None, clock: Callable[[], float] = time.time):
        if not url.startswith(("http://", "https://")):
            raise ValueError(f"dcgm-exporter URL must start with http:// or https://, got {url!r}")
        if timeout <= 0:
            raise ValueError("timeout must be > 0 seconds")
        self.url = url
        self.node = node
        self.timeout = timeout
        self.expected_gpus = expected_gpus
        self.clock = clock
        self._session = requests.Session()
        self._stale_after = max_age + 3 * timeout
        self._errors = dict.fromkeys(REASONS, 0)
        self._seen: dict[str, str] = {}  # uuid -> gpu index, of every GPU on a good page since start
        self._most_gpus = 0
        self._last_good: tuple[float, Page] | None = None  # (clock(), page) of the last good read
        self._guard = StallGuard(timeout, "vigil-dcgm-read")
        self._snapshot = BackgroundSnapshot(self._read, max_age=max_age, wait=timeout)

    def start(self) -> None:
        """Read the page now (waiting at most `timeout`), then every `max_age` seconds in a background loop;
        scrapes then never wait for dcgm-exporter."""
        self._snapshot.start()

    def stop(self) -> None:
        self._snapshot.stop()
        self._guard.close()

    def _read(self) -> Page:
        pages: list[Page] = []
        try:
            # `requests`' timeout bounds each socket read; `read_page` bounds the whole read (a page that
            # trickles in is given up on); the guard stops waiting after `timeout` and starts no second
            # read until that one has ended
            if not self._guard.run(0, lambda: pages.append(read_page(self._session, self.url, self.timeout))):
                raise PageError("timeout", f"no complete page within {self.timeout:g} s")
        except PageError as error:
            self._errors[error.reason] += 1
            raise
        page = pages[0]
        for reading in page.gpus.values():
            self._seen[reading.uuid] = reading.gpu
        self._most_gpus = max(self._most_gpus, len(page.gpus))
        self._last_good = (self.clock(), page)
        return page

    def last_error(self) -> str | None:
        snap = self._snapshot.get()
        return "no page read yet" if snap is None else snap.error

    def collect(self):
        snap, good = self._snapshot.get(), self._last_good
        # publish the last read's page only if it worked and is not too old
        fresh = snap is not None and snap.ok and good is not None and self.clock() - good[0] <= self._stale_after
        page = snap.value if fresh else None
        node = self.node or (good[1].hostname if good else None) or socket.gethostname()
        families = {s.name: family(s) for s in SPECS}

        def put(name: str, labels: dict[str, str], value: float = 1.0) -> None:
            add(families[name], _SPEC_BY_NAME[name], {"node": node, **labels}, value)

        put("dcgm_up", {}, 1.0 if page else 0.0)
        put("vigil_node_gpus_visible", {}, float(len(page.gpus)) if page else 0.0)
        expected = self.expected_gpus if self.expected_gpus is not None else self._most_gpus or None
        if expected is not None:
            put("vigil_node_gpus_expected", {}, float(expected))
        if snap is not None:
            put("vigil_exporter_collection_duration_seconds", {}, snap.duration_s)
        if good is not None:
            put("vigil_exporter_last_collection_timestamp_seconds", {}, good[0])
        for reason, count in self._errors.items():
            put("vigil_exporter_dcgm_errors_total", {"reason": reason}, float(count))
        for reading in (page.gpus.values() if page else ()):
            gpu = {"gpu": reading.gpu, "uuid": reading.uuid}
            put("vigil_gpu_up", gpu)
            put("vigil_gpu_info", {**gpu, **reading.info})
            for (metric, extra), value in sorted(reading.values.items()):
                put(metric, {**gpu, **dict(extra)}, value)
        for uuid, index in (sorted(list(self._seen.items())) if page else ()):
            if uuid not in page.gpus:  # seen before, gone now: lost, as NVML reports a GPU that fell off
                put("vigil_gpu_up", {"gpu": index, "uuid": uuid}, 0.0)
        yield from (fam for fam in families.values() if fam.samples)
