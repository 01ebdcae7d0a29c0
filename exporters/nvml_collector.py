"""The NVML GPU collector: a background loop reads every GPU into a snapshot; `collect()` serves it.

`collect()` never calls NVML, so a stuck NVML call (a hung driver) cannot stall `/metrics`: the loop
just stops refreshing and `vigil_exporter_last_collection_timestamp_seconds` goes stale. The NVML
library is a parameter: `NvmlCollector(pynvml, node)` on a GPU host, or a `SimulatedNvml` in the
simulated fleet and in tests; the collector never imports the simulator. The profiling ratios of Hopper
and newer GPUs come from NVML's GPM, between each GPU's samples of two consecutive cycles (`exporters.gpm`).

    registry = CollectorRegistry()
    collector = NvmlCollector(pynvml, "gpu-host-1", interval=5.0)
    collector.start()                      # nvmlInit, first cycle, loop and XID threads
    registry.register(collector)
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from typing import Any, Callable, Iterator

from prometheus_client.core import Metric

from vigil.exporters.gpm import GpmSampler
from vigil.exporters.gpu_isolation import StallGuard
from vigil.exporters.gpu_reader import GpuLost, GpuMemo, GpuReader, Rows, text
from vigil.exporters.exposition import render
from vigil.exporters.gpu_specs import SPECS
from vigil.exporters.metric_families import family
from vigil.exporters.spec import GpuProcess
from vigil.exporters.xid import XidWatcher, xid_class


class NvmlCollector:
    """Prometheus collector for the GPUs of one node, read through `nvml` every `interval` seconds."""

    def __init__(self, nvml: Any, node: str, *, interval: float = 5.0, expected_gpus: int | None = None,
                 watch_xids: bool = True, gpu_timeout: float | None = None,
                 clock: Callable[[], float] = time.time, nvlink_per_link: bool = False) -> None:
        if interval <= 0:
            raise ValueError("interval must be positive")
        self.nvml = nvml
        self.node = node
        self.interval = interval
        self.expected_gpus = expected_gpus
        self.clock = clock
        self._errors: Counter[str] = Counter()
        self._reader = GpuReader(nvml, node, self._errors, nvlink_per_link=nvlink_per_link)
        self._gpm = GpmSampler(self._reader)  # profiling metrics of Hopper+ GPUs, between two cycles' samples
        self._memos: dict[int, GpuMemo] = {}
        self._initialized = False
        self._system: tuple[str, str] = ("", "")  # driver, cuda
        self._snapshot: Rows = {}
        self._xid_lock = threading.Lock()
        self._xid_counts: Counter[tuple[int, int]] = Counter()
        self._xid_last: dict[tuple[int, int], float] = {}  # (gpu, xid) -> Unix time of its last event
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        # gpu_timeout: read each GPU on a worker and give up on a stuck one after that many seconds;
        # None reads in the calling thread (the simulated fleet, where threads are the scarce resource)
        self._guard = StallGuard(gpu_timeout, f"vigil-gpu-read-{node}") if gpu_timeout else None
        self._xids = (XidWatcher(nvml, self.handles, self.record_xid, clock=clock)
                      if watch_xids else None)
        self._cycle = 0
        self._xid_version = 0
        self._rendered: tuple[tuple[int, int], bytes] | None = None

    # -- lifecycle ----------------------------------------------------------------------------------
    def start(self, loop: bool = True) -> None:
        """Run one cycle now (so the first scrape has data), then refresh every `interval` seconds in a
        background thread; `loop=False` leaves the refreshing to the caller (the fleet's scheduler)."""
        self.refresh()
        if self._xids is not None:
            self._xids.start()
        if loop:
            self._thread = threading.Thread(target=self._loop, name=f"vigil-nvml-{self.node}", daemon=True)
            self._thread.start()

    def request_stop(self) -> None:
        """Tell the background threads to finish, without waiting (stopping many collectors at once)."""
        self._stop.set()
        if self._xids is not None:
            self._xids.request_stop()

    def stop(self) -> None:
        """Stop the loop and the XID watcher and shut NVML down (a hung NVML call is abandoned)."""
        self.request_stop()
        if self._xids is not None:
            self._xids.stop()
        if self._thread is not None:
            self._thread.join(timeout=self.interval + 1)
        if self._guard is not None:
            self._guard.close()
        if self._thread is None or not self._thread.is_alive():  # not under a cycle still inside NVML
            for index in list(self._memos):
                self._forget_gpm(index)
        if self._initialized:
            try:
                self.nvml.nvmlShutdown()
            except self.nvml.NVMLError:
                pass
            self._initialized = False

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self.refresh()

    def handles(self) -> dict[int, Any]:
        """{gpu index: cached NVML handle} of the GPUs seen so far (the XID watcher registers these)."""
        return {i: m.handle for i, m in list(self._memos.items()) if m.handle is not None}

    def processes(self) -> list[GpuProcess]:
        """Compute processes on the GPUs that answered in the last cycle (no NVML call): what job
        attribution (`exporters.jobs.JobAttributionCollector`) maps to jobs."""
        return [GpuProcess(self.node, memo.index, memo.uuid, pid, used)
                for memo in sorted(list(self._memos.values()), key=lambda m: m.index) if memo.up
                for pid, used in memo.processes]

    def unreadable_gpus(self) -> list[int]:
        """Indices of the GPUs seen so far that the last cycle could not read (lost or stalled): job
        attribution keeps their jobs, whose processes they can no longer list."""
        return sorted(m.index for m in list(self._memos.values()) if not m.up)

    def record_xid(self, gpu: int, xid: int, when: float) -> None:
        """Count one XID event (called from the XID watcher thread)."""
        with self._xid_lock:
            self._xid_counts[(gpu, xid)] += 1
            self._xid_last[(gpu, xid)] = when
            self._xid_version += 1

    # -- one collection cycle -----------------------------------------------------------------------
    def _ensure_init(self) -> int | None:
        """Initialise NVML and cache handles; the GPU count, or None when NVML is unusable."""
        call = self._reader.call
        try:
            if not self._initialized:
                self.nvml.nvmlInit()
                self._initialized = True
                for memo in self._memos.values():  # an earlier NVML session's handles are invalid, and
                    memo.handle = memo.info = memo.nvlinks = None  # a reloaded driver may be a new version
                    self._forget_gpm(memo.index)
                self._reader.forget_refused()
                self._system = (text(call("nvmlSystemGetDriverVersion") or ""),
                                _cuda_version(call("nvmlSystemGetCudaDriverVersion")))
            count = self.nvml.nvmlDeviceGetCount()
        except self.nvml.NVMLError as error:
            self._errors[self._reader.error_name(error)] += 1
            self._initialized = False
            return None
        if self.expected_gpus is None:
            self.expected_gpus = count
        for index in range(count):
            memo = self._memos.setdefault(index, GpuMemo(index))
            if memo.handle is None:
                try:
                    memo.handle = call("nvmlDeviceGetHandleByIndex", index)
                except GpuLost:
                    pass
        return count

    def refresh(self) -> None:
        """Read every GPU once and publish the new snapshot (atomically, by replacing the reference)."""
        started = time.perf_counter()
        rows: Rows = {}
        count = self._ensure_init()
        visible = 0
        for index, memo in sorted(self._memos.items()):
            up = stalled = False
            if count is not None and index < count and memo.handle is not None:
                up, stalled = self._read_gpu(memo, rows)
                if not (up or stalled):  # lost: GPM's next metrics start from a new pair of samples
                    self._gpm.forget(index)
            memo.up = up
            visible += up
            labels = (self.node, str(index), memo.uuid)
            rows.setdefault("vigil_gpu_up", []).append((labels, 1.0 if up else 0.0))
            rows.setdefault("vigil_gpu_collection_stalled", []).append((labels, 1.0 if stalled else 0.0))
            if memo.info is not None:
                rows.setdefault("vigil_gpu_info", []).append((labels + memo.info, 1.0))
        node = (self.node,)
        rows["vigil_node_gpus_visible"] = [(node, float(visible))]
        if self.expected_gpus is not None:
            rows["vigil_node_gpus_expected"] = [(node, float(self.expected_gpus))]
        rows["vigil_exporter_nvml_errors_total"] = [((self.node, code), float(n)) for code, n in sorted(self._errors.items())]
        rows["vigil_exporter_collection_duration_seconds"] = [(node, time.perf_counter() - started)]
        rows["vigil_exporter_last_collection_timestamp_seconds"] = [(node, self.clock())]
        self._snapshot = rows
        self._cycle += 1

    def _read_gpu(self, memo: GpuMemo, rows: Rows) -> tuple[bool, bool]:
        """Read one GPU into `rows`; (up, stalled). Each read fills its own rows, merged only when it
        completes, so a stuck read that returns late cannot touch a snapshot already published."""
        own: Rows = {}

        def read() -> None:
            self._reader.read(memo, own, *self._system)
            self._gpm.read(memo, own)

        try:
            if self._guard is None:
                read()
            elif not self._guard.run(memo.index, read):
                return False, True
        except GpuLost:
            return False, False
        for name, samples in own.items():
            rows.setdefault(name, []).extend(samples)
        return True, False

    def _forget_gpm(self, index: int) -> None:
        """Free the GPU's held GPM sample, unless a read stuck in NVML may still be using it."""
        if self._guard is None or not self._guard.stalled(index):
            self._gpm.forget(index)

    def _xid_rows(self, rows: Rows) -> None:
        uuids = {i: m.uuid for i, m in list(self._memos.items())}  # list(): safe while a cycle adds GPUs
        with self._xid_lock:
            counts = sorted(self._xid_counts.items())
            last = sorted(self._xid_last.items())
        for (gpu, xid), n in counts:
            labels = (self.node, str(gpu), uuids.get(gpu, ""), str(xid), xid_class(xid))
            rows.setdefault("vigil_gpu_xid_errors_total", []).append((labels, float(n)))
        gpu_last: dict[int, float] = {}
        for (gpu, xid), when in last:
            labels = (self.node, str(gpu), uuids.get(gpu, ""), str(xid), xid_class(xid))
            rows.setdefault("vigil_gpu_xid_last_seen_timestamp_seconds", []).append((labels, when))
            gpu_last[gpu] = max(when, gpu_last.get(gpu, when))
        for gpu, when in sorted(gpu_last.items()):
            rows.setdefault("vigil_gpu_last_xid_timestamp_seconds", []).append(
                ((self.node, str(gpu), uuids.get(gpu, "")), when))

    # -- Prometheus ---------------------------------------------------------------------------------
    def _rows(self) -> Rows:
        rows = dict(self._snapshot)
        self._xid_rows(rows)
        return rows

    def collect(self) -> Iterator[Metric]:
        """Metric families of the last snapshot (plus live XID counts); never calls NVML."""
        rows = self._rows()
        for spec in SPECS:
            samples = rows.get(spec.name)
            if not samples:
                continue
            fam = family(spec)
            for labels, value in samples:
                fam.add_metric(list(labels), {} if spec.type == "info" else value)
            yield fam

    def exposition(self) -> bytes:
        """Exposition text of the current snapshot, rendered once per cycle and per new XID event."""
        key = (self._cycle, self._xid_version)
        rendered = self._rendered
        if rendered is None or rendered[0] != key:
            rendered = (key, render(SPECS, self._rows()))
            self._rendered = rendered
        return rendered[1]


def _cuda_version(value: int | None) -> str:
    """12040 -> "12.4" (NVML encodes the CUDA driver version as 1000 * major + 10 * minor)."""
    return "" if value is None else f"{value // 1000}.{value % 1000 // 10}"
