"""GPM calls of the simulated NVML (a mixin of SimulatedNvml): the profiling metrics of a Hopper GPU.

A sample is a real `pynvml.c_nvmlGpmSample_t` pointer (so it fits pynvml's `c_nvmlGpmMetricsGet_t`)
to a small buffer the simulator owns; it records the GPU, the simulated time and the GPU's load when it
was taken. `nvmlGpmMetricsGet` answers from the mean load of its two samples, as GPM averages its
counters over the interval: SM active 0.85 x utilization, SM occupancy half of that, tensor pipe about
0.6 x and DRAM bandwidth about 0.4 x (tilted a little per GPU), in percent. A free, idle or hung GPU
(load 0, `exporters.sim.jobs`) therefore reads 0. Faults fail the calls as every other call (the host's
`_gpu` check): a lost GPU raises GPU_IS_LOST, a hung one blocks.

Configuration: GPUs in `gpm_unsupported` answer `isSupportedDevice` 0 and refuse samples (as a
pre-Hopper GPU); a GPM function named in `unsupported` raises NOT_SUPPORTED (an old driver); a metric
named in `unsupported` by its pynvml constant (`NVML_GPM_METRIC_DRAM_BW_UTIL`) comes back with its own
`nvmlReturn` NOT_SUPPORTED while the others answer.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from typing import Any

import pynvml

from vigil.exporters.sim.load import _unit_hash
from vigil.exporters.sim.nvml_health import raise_nvml

_METRIC_NAMES = {getattr(pynvml, name): name for name in dir(pynvml) if name.startswith("NVML_GPM_METRIC_")}


def gpm_percent(node: str, gpu: int, load: float) -> dict[int, float]:
    """The GPM metrics (percent) this simulator answers, by metric id, for a GPU at `load` (0..1)."""
    tilt = 0.9 + 0.2 * _unit_hash(node, gpu, "gpm")  # per GPU: more tensor work, less DRAM traffic, or so
    sm_active = 85.0 * load
    return {pynvml.NVML_GPM_METRIC_GRAPHICS_UTIL: 100.0 * load,
            pynvml.NVML_GPM_METRIC_SM_UTIL: sm_active,
            pynvml.NVML_GPM_METRIC_SM_OCCUPANCY: 0.5 * sm_active,
            pynvml.NVML_GPM_METRIC_ANY_TENSOR_UTIL: 60.0 * load * tilt,
            pynvml.NVML_GPM_METRIC_DRAM_BW_UTIL: 40.0 * load * (2.0 - tilt)}


@dataclass
class _Sample:
    buffer: Any  # what the sample pointer points to (kept alive here)
    gpu: int | None = None  # None until nvmlGpmSampleGet fills it
    t: float = 0.0
    load: float = 0.0


class GpmCalls:
    """nvmlGpmQueryDeviceSupport, nvmlGpmSampleAlloc/Get/Free and nvmlGpmMetricsGet."""

    def gpm_samples_allocated(self) -> int:
        """Samples allocated and not freed yet (tests check that the collector frees what it drops)."""
        with self._lock:
            return len(self._gpm_samples)

    def nvmlGpmQueryDeviceSupport(self, handle: Any) -> Any:
        index, _ = self._gpu(handle, "nvmlGpmQueryDeviceSupport")
        return pynvml.c_nvmlGpmSupport_t(version=pynvml.NVML_GPM_SUPPORT_VERSION,
                                         isSupportedDevice=int(index not in self.gpm_unsupported))

    def nvmlGpmSampleAlloc(self) -> Any:
        self._check_init()
        if "nvmlGpmSampleAlloc" in self.unsupported:
            raise_nvml(pynvml.NVML_ERROR_NOT_SUPPORTED)
        buffer = ctypes.create_string_buffer(8)
        with self._lock:
            self._gpm_samples[ctypes.addressof(buffer)] = _Sample(buffer)
        return ctypes.cast(buffer, pynvml.c_nvmlGpmSample_t)

    def nvmlGpmSampleFree(self, sample: Any) -> None:
        with self._lock:
            if self._gpm_samples.pop(_address(sample), None) is None:
                raise_nvml(pynvml.NVML_ERROR_INVALID_ARGUMENT)

    def nvmlGpmSampleGet(self, handle: Any, sample: Any) -> Any:
        index, state = self._gpu(handle, "nvmlGpmSampleGet")
        if index in self.gpm_unsupported:
            raise_nvml(pynvml.NVML_ERROR_NOT_SUPPORTED)
        load = self._load(index, state)
        with self._lock:
            record = self._gpm_samples.get(_address(sample))
            if record is None:
                raise_nvml(pynvml.NVML_ERROR_INVALID_ARGUMENT)
            record.gpu, record.t, record.load = index, self.clock(), load
        return sample

    def nvmlGpmMetricsGet(self, request: Any) -> Any:
        if request.version != pynvml.NVML_GPM_METRICS_GET_VERSION:
            raise_nvml(pynvml.NVML_ERROR_ARGUMENT_VERSION_MISMATCH)
        with self._lock:
            first = self._gpm_samples.get(_address(request.sample1))
            second = self._gpm_samples.get(_address(request.sample2))
        if (first is None or second is None or first.gpu is None or first.gpu != second.gpu
                or second.t < first.t or not 0 < request.numMetrics <= pynvml.NVML_GPM_METRIC_MAX):
            raise_nvml(pynvml.NVML_ERROR_INVALID_ARGUMENT)
        self._gpu(self._handles[first.gpu], "nvmlGpmMetricsGet")  # faults and refusals, as the other calls
        answers = gpm_percent(self.node, first.gpu, (first.load + second.load) / 2)
        for slot in range(request.numMetrics):
            metric = request.metrics[slot]
            value = answers.get(metric.metricId)
            refused = value is None or _METRIC_NAMES.get(metric.metricId) in self.unsupported
            metric.nvmlReturn = pynvml.NVML_ERROR_NOT_SUPPORTED if refused else pynvml.NVML_SUCCESS
            metric.value = 0.0 if refused else value
        return request


def _address(sample: Any) -> int | None:
    """The address a sample pointer holds (what identifies it); None for anything else."""
    try:
        return ctypes.cast(sample, ctypes.c_void_p).value
    except ctypes.ArgumentError:
        return None
