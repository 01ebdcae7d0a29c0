"""DCGM-style profiling metrics of Hopper and newer GPUs from NVML's GPM (GPU Performance Monitoring).

GPM computes its metrics between two samples of a GPU's performance counters. `GpmSampler.read` takes
one sample of the GPU each collection cycle and exports `gpu_specs.PROFILING` (SM active, SM occupancy,
tensor pipe active, DRAM active: GPM's percent / 100, clamped to 0..1) computed between the sample it
kept from the GPU's previous cycle and this one; it then frees the older sample and keeps the new one.
So the first cycle exports none of them, nor the first after a lost GPU or a new NVML session.

A GPU without GPM is asked once per NVML session, then left alone: no series, no error counted every
cycle. A pre-Hopper GPU answers `isSupportedDevice` 0; a driver without GPM refuses the calls with
NOT_SUPPORTED or FUNCTION_NOT_FOUND (counted once, like any refused call of `exporters.gpu_reader`), one
that keeps performance counters to admin users may answer NO_PERMISSION (likewise); a pynvml without the
GPM functions is not asked at all. A metric whose own `nvmlReturn` is not success
is skipped alone; a lost GPU raises `GpuLost` as every other read does.
"""

from __future__ import annotations

import math
from typing import Any

from vigil.exporters.gpu_reader import GpuMemo, GpuReader, Rows
from vigil.exporters.gpu_specs import GPM_METRICS

_NEEDED = ("nvmlGpmQueryDeviceSupport", "nvmlGpmSampleAlloc", "nvmlGpmSampleGet", "nvmlGpmMetricsGet",
           "nvmlGpmSampleFree", "c_nvmlGpmMetricsGet_t", "NVML_GPM_METRICS_GET_VERSION", *GPM_METRICS.values())
_FAILED = object()  # what `_call` answers for a call that raised an NVML error


class GpmSampler:
    """Holds one GPM sample per GPU between cycles and exports the metrics between consecutive samples."""

    def __init__(self, reader: GpuReader) -> None:
        self.reader = reader
        self.nvml = reader.nvml
        # (metric name, GPM metric id); none with a pynvml older than GPM
        self._metrics = ([(name, getattr(self.nvml, constant)) for name, constant in GPM_METRICS.items()]
                         if all(hasattr(self.nvml, name) for name in _NEEDED) else [])
        self._supported: dict[int, bool] = {}  # gpu index -> its answer in this NVML session
        self._held: dict[int, Any] = {}  # gpu index -> the sample of its last cycle

    def read(self, memo: GpuMemo, rows: Rows) -> None:
        """Sample the GPU; add the metrics since the previous cycle's sample to `rows`. Raises GpuLost."""
        if not self._metrics or not self._supports(memo):
            return
        index = memo.index
        sample = self._call(index, "nvmlGpmSampleAlloc")
        if sample is _FAILED:
            return
        taken = False
        try:
            taken = self._call(index, "nvmlGpmSampleGet", memo.handle, sample) is not _FAILED
        finally:
            if not taken:  # failed, or the GPU is lost (GpuLost): the previous sample stays held
                self._free(sample)
        if not taken:
            return
        older = self._held.get(index)
        self._held[index] = sample
        if older is not None:
            try:
                self._put_metrics(memo, older, sample, rows)
            finally:
                self._free(older)

    def forget(self, index: int) -> None:
        """Free the GPU's held sample and forget its answer (a lost GPU, a new NVML session): its next
        sample starts afresh."""
        self._supported.pop(index, None)
        sample = self._held.pop(index, None)
        if sample is not None:
            self._free(sample)

    def _supports(self, memo: GpuMemo) -> bool:
        known = self._supported.get(memo.index)
        if known is None:
            # None: refused (the reader remembers that and does not ask again) or a passing error (asked again)
            answer = self.reader.call("nvmlGpmQueryDeviceSupport", memo.handle)
            if answer is None:
                return False
            known = self._supported[memo.index] = bool(answer.isSupportedDevice)
        return known

    def _put_metrics(self, memo: GpuMemo, older: Any, newer: Any, rows: Rows) -> None:
        nvml = self.nvml
        request = nvml.c_nvmlGpmMetricsGet_t()
        request.version = nvml.NVML_GPM_METRICS_GET_VERSION
        request.numMetrics = len(self._metrics)
        request.sample1, request.sample2 = older, newer
        for slot, (_, metric_id) in enumerate(self._metrics):
            request.metrics[slot].metricId = metric_id
        if self._call(memo.index, "nvmlGpmMetricsGet", request) is _FAILED:
            return
        labels = (self.reader.node, str(memo.index), memo.uuid)
        for slot, (name, _) in enumerate(self._metrics):
            metric = request.metrics[slot]
            if metric.nvmlReturn == nvml.NVML_SUCCESS and math.isfinite(metric.value):
                rows.setdefault(name, []).append((labels, min(1.0, max(0.0, metric.value / 100))))

    def _call(self, index: int, fn_name: str, *args: Any) -> Any:
        """Call a GPM function; `_FAILED` on an NVML error (counted), GpuLost when the GPU is gone. The
        samples are new each cycle, so a refusal is not remembered per argument, as the reader's `call`
        does: it turns GPM off for the GPU until the next NVML session."""
        try:
            return getattr(self.nvml, fn_name)(*args)
        except self.nvml.NVMLError as error:
            refused = self.reader.refusal(fn_name, error)
            if refused or getattr(error, "value", None) == self.nvml.NVML_ERROR_NO_PERMISSION:
                self.forget(index)
                self._supported[index] = False
            return _FAILED

    def _free(self, sample: Any) -> None:
        try:
            self.nvml.nvmlGpmSampleFree(sample)
        except self.nvml.NVMLError as error:  # nothing more to do than count it
            self.reader.errors[self.reader.error_name(error)] += 1
