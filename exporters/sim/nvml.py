"""A simulated NVML library for one node, call-compatible with `pynvml`.

`SimulatedNvml` has methods named like pynvml's functions, with the same arguments, returning the same
kinds of values (pynvml's own ctypes structs where pynvml returns one) and raising pynvml's own
exception classes (`pynvml.NVMLError(code)` picks the subclass). A collector written against `pynvml`
therefore runs unchanged against the simulator. Constants (`NVML_*`, `nvmlEventType*`, ...) and the
exception classes are looked up on pynvml itself; a function the simulator does not implement raises
`NVMLError_FunctionNotFound`, as pynvml does on a driver that lacks it.

Values follow `exporters.sim.load`: utilization from `gpu_load(node, gpu, now)`, temperature and power
from the load; faults (see `exporters.sim.faults`) change the answers of one GPU.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any, Callable

import pynvml

from vigil.exporters.sim import faults as F
from vigil.exporters.sim.identity import device_uuid  # noqa: F401 - part of this module's API (vigil.stack.history uses it)
from vigil.exporters.sim.jobs import HUNG_MEMORY, IDLE_MEMORY, GpuJob, JobSchedule
from vigil.exporters.sim.load import gpu_load, gpu_power, gpu_temperature
from vigil.exporters.sim.nvml_gpm import GpmCalls
from vigil.exporters.sim.nvml_mig import MigCalls, SimMigHandle
from vigil.exporters.sim.nvml_static import MEM_CLOCK_MHZ, POWER_LIMIT_W, SM_CLOCK_MAX_MHZ, StaticCalls
from vigil.exporters.sim.nvml_health import HealthCalls, SimEventData, SimEventSet, raise_nvml as _raise

MIB = 1024**2
MEMORY_TOTAL = 81_559 * MIB  # what an H100 80GB HBM3 reports
DRIVER_VERSION, CUDA_VERSION = "550.90.07", 12040
NVLINKS = 18
LOST_FAULT = "xid79"


@dataclass(frozen=True, eq=False)
class SimHandle:
    """A device handle: identity matters (events carry the same object), like pynvml's pointers."""

    node: str
    index: int


# what a real H100 SXM refused (driver 580.159.04, docs/exporters-real-gpu.md): it has no fan, and since
# Ampere a GPU remaps rows instead of retiring pages (the retired-page fields 29-31 are refused too)
H100_SXM_REFUSED = frozenset({"nvmlDeviceGetFanSpeed", "nvmlDeviceGetRetiredPages",
                              "nvmlDeviceGetRetiredPagesPendingStatus"})


class SimulatedNvml(StaticCalls, HealthCalls, MigCalls, GpmCalls):
    """Simulated NVML of one node with `gpus` H100-like GPUs; thread-safe like the real library.

    `unsupported` names pynvml functions that raise NOT_SUPPORTED on this node (`H100_SXM_REFUSED` is what
    a real H100 SXM refuses; the fleet passes it); `clock` gives the Unix time (tests pass a fake clock);
    GPUs in `gpm_unsupported` have no GPM, as a pre-Hopper GPU (`exporters.sim.nvml_gpm`).
    """

    def __init__(self, node: str = "node-1", gpus: int = 8, *, unsupported: frozenset[str] = frozenset(),
                 nvlinks: int = NVLINKS, mig_gpus: dict[int, int] | None = None,
                 clock: Callable[[], float] = time.time, gpm_unsupported: frozenset[int] = frozenset()) -> None:
        self.node = node
        self.gpu_count = gpus
        self.nvlinks = nvlinks
        self.unsupported = frozenset(unsupported)
        self.clock = clock
        self._lock = threading.Lock()
        self._initialized = 0
        self._handles = [SimHandle(node, i) for i in range(gpus)]
        self._states = [F.GpuState() for _ in range(gpus)]
        self._event_sets: list[SimEventSet] = []
        self._load_cache: dict[int, tuple[int, float]] = {}
        self._driver_loaded = True
        self.mig_gpus = dict(mig_gpus or {})
        self._mig_cache: dict[int, list[SimMigHandle]] = {}
        self.gpm_unsupported = frozenset(gpm_unsupported)
        self._gpm_samples: dict[int, Any] = {}  # address -> GPM sample (exporters.sim.nvml_gpm)
        self.memory_total = MEMORY_TOTAL
        # set by the fleet on nodes with job slots: load, memory and processes then follow the jobs
        self.jobs: JobSchedule | None = None

    # -- fault control (used by the fleet and tests; not part of the NVML API) --------------------
    def inject(self, fault: F.Fault) -> None:
        """Apply a GPU fault now and deliver its XID events to every registered event set."""
        with self._lock:
            state = self._states[fault.gpu]
            self._advance(fault.gpu, state)
            events = F.inject(state, fault)
            for event_set in self._event_sets:
                mask = event_set.masks.get(fault.gpu, 0)
                for event_type, xid in events:
                    if mask & event_type:
                        event_set.events.put(SimEventData(self._handles[fault.gpu], event_type, xid))

    def reset(self, gpu: int | None = None) -> int:
        """Reset one GPU (or all): clears its faults; returns the number of faults cleared."""
        with self._lock:
            indexes = range(self.gpu_count) if gpu is None else [gpu]
            return sum(F.reset_gpu(self._states[i]) for i in indexes)

    def unload_driver(self) -> None:
        """Model a driver unload: the NVML session ends, event sets die, nvmlInit fails until reloaded."""
        with self._lock:
            self._driver_loaded = False
            self._initialized = 0
            for event_set in self._event_sets:
                event_set.valid = False
            self._event_sets.clear()

    def load_driver(self) -> None:
        with self._lock:
            self._driver_loaded = True

    def active_faults(self) -> list[F.Fault]:
        with self._lock:
            return [f for s in self._states for f in s.faults.values()]

    # -- helpers ------------------------------------------------------------------------------------
    def __getattr__(self, name: str) -> Any:
        # constants and exception classes come from pynvml itself; unknown functions behave like a
        # driver that lacks them
        value = getattr(pynvml, name)
        if callable(value) and name.startswith("nvml") and not isinstance(value, type):
            def missing(*_args: Any, **_kwargs: Any) -> Any:
                _raise(pynvml.NVML_ERROR_FUNCTION_NOT_FOUND)
            return missing
        setattr(self, name, value)  # a constant: found directly on the instance from now on
        return value

    def __dir__(self) -> list[str]:
        return sorted(set(super().__dir__()) | set(dir(pynvml)))

    def _gpu(self, handle: Any, call: str) -> tuple[int, F.GpuState]:
        """Check init, handle, faults and support; return (index, state). Called under no lock."""
        if not self._initialized:
            _raise(pynvml.NVML_ERROR_UNINITIALIZED)
        if not isinstance(handle, SimHandle) or handle.node != self.node:
            _raise(pynvml.NVML_ERROR_INVALID_ARGUMENT)
        state = self._states[handle.index]
        hang = state.faults.get("nvml-hang")
        if hang is not None:
            time.sleep(hang.params.get("seconds", 30))
        if LOST_FAULT in state.faults:
            _raise(pynvml.NVML_ERROR_GPU_IS_LOST)
        if call in self.unsupported:
            _raise(pynvml.NVML_ERROR_NOT_SUPPORTED)
        return handle.index, state

    def _load(self, index: int, state: F.GpuState) -> float:
        if state.has("load-anomaly"):
            return 0.02
        # one value per GPU per clock second: every call of a collection cycle sees the same load, and
        # the hashing in gpu_load is not repeated ~30 times per GPU per cycle
        second = int(self.clock())
        cached = self._load_cache.get(index)
        if cached is None or cached[0] != second:
            load = gpu_load(self.node, index, second) if self.jobs is None else self.jobs.load(self.node, index, second)
            cached = (second, load)
            self._load_cache[index] = cached
        return cached[1]

    def job_of(self, index: int) -> GpuJob | None:
        """The simulated job holding GPU `index` now (None when it is free or the node has no jobs)."""
        return None if self.jobs is None else self.jobs.gpu(self.node, index, self.clock())

    def _memory_share(self, index: int, state: F.GpuState) -> float:
        held = self.job_of(index)
        if held is not None and held.activity != "running":  # an idle rank holds a context, a hung one its data
            return IDLE_MEMORY if held.activity == "idle" else HUNG_MEMORY
        return min(0.97, 0.01 + 0.9 * self._load(index, state))

    def _temperature(self, index: int, state: F.GpuState) -> float:
        if state.has("overheat"):
            return 95.0
        return gpu_temperature(self._load(index, state))

    def _power_w(self, index: int, state: F.GpuState) -> float:
        return gpu_power(self._load(index, state), POWER_LIMIT_W)

    def _advance(self, index: int, state: F.GpuState) -> None:
        F.advance(state, self.clock(), self._power_w(index, state))

    # -- system -------------------------------------------------------------------------------------
    def nvmlInit(self) -> None:
        with self._lock:
            if not self._driver_loaded:
                _raise(pynvml.NVML_ERROR_DRIVER_NOT_LOADED)
            self._initialized += 1

    def nvmlInitWithFlags(self, flags: int) -> None:
        self.nvmlInit()

    def nvmlShutdown(self) -> None:
        with self._lock:
            if not self._initialized:
                _raise(pynvml.NVML_ERROR_UNINITIALIZED)
            self._initialized -= 1
            if not self._initialized:  # the driver session ends: its event sets are gone
                for event_set in self._event_sets:
                    event_set.valid = False
                self._event_sets.clear()

    def nvmlSystemGetDriverVersion(self) -> str:
        self._check_init()
        return DRIVER_VERSION

    def nvmlSystemGetCudaDriverVersion(self) -> int:
        self._check_init()
        return CUDA_VERSION

    def nvmlSystemGetNVMLVersion(self) -> str:
        self._check_init()
        return "12." + DRIVER_VERSION

    def _check_init(self) -> None:
        if not self._initialized:
            _raise(pynvml.NVML_ERROR_UNINITIALIZED)

    def nvmlDeviceGetCount(self) -> int:
        self._check_init()
        return self.gpu_count

    def nvmlDeviceGetHandleByIndex(self, index: int) -> SimHandle:
        self._check_init()
        if not isinstance(index, int) or not 0 <= index < self.gpu_count:
            _raise(pynvml.NVML_ERROR_INVALID_ARGUMENT)
        self._gpu(self._handles[index], "nvmlDeviceGetHandleByIndex")
        return self._handles[index]

    # -- load, memory, thermals, power, clocks ------------------------------------------------------
    def nvmlDeviceGetUtilizationRates(self, handle: SimHandle) -> pynvml.c_nvmlUtilization_t:
        index, state = self._gpu(handle, "nvmlDeviceGetUtilizationRates")
        if index in self.mig_gpus:  # NVML reports utilization per MIG instance only, not for the GPU
            _raise(pynvml.NVML_ERROR_NOT_SUPPORTED)
        load = self._load(index, state)
        return pynvml.c_nvmlUtilization_t(gpu=round(100 * load), memory=round(60 * load))

    def nvmlDeviceGetMemoryInfo(self, handle: SimHandle, version: int | None = None) -> pynvml.c_nvmlMemory_t:
        if isinstance(handle, SimMigHandle):
            return self._mig_memory(handle)
        index, state = self._gpu(handle, "nvmlDeviceGetMemoryInfo")
        used = int(MEMORY_TOTAL * self._memory_share(index, state)) // MIB * MIB
        return pynvml.c_nvmlMemory_t(total=MEMORY_TOTAL, free=MEMORY_TOTAL - used, used=used)

    def nvmlDeviceGetTemperature(self, handle: SimHandle, sensor: int) -> int:
        index, state = self._gpu(handle, "nvmlDeviceGetTemperature")
        if sensor != pynvml.NVML_TEMPERATURE_GPU:
            _raise(pynvml.NVML_ERROR_INVALID_ARGUMENT)
        return round(self._temperature(index, state))

    def nvmlDeviceGetPowerUsage(self, handle: SimHandle) -> int:
        index, state = self._gpu(handle, "nvmlDeviceGetPowerUsage")
        return round(self._power_w(index, state) * 1000)

    def nvmlDeviceGetEnforcedPowerLimit(self, handle: SimHandle) -> int:
        self._gpu(handle, "nvmlDeviceGetEnforcedPowerLimit")
        return round(POWER_LIMIT_W * 1000)

    def nvmlDeviceGetTotalEnergyConsumption(self, handle: SimHandle) -> int:
        index, state = self._gpu(handle, "nvmlDeviceGetTotalEnergyConsumption")
        with self._lock:
            self._advance(index, state)
            return int(state.energy_mj)

    def nvmlDeviceGetClockInfo(self, handle: SimHandle, clock_type: int) -> int:
        index, state = self._gpu(handle, "nvmlDeviceGetClockInfo")
        if clock_type == pynvml.NVML_CLOCK_MEM:
            return MEM_CLOCK_MHZ
        if state.has("overheat"):
            return 1095
        if state.has("thermal-throttle"):
            return 1410
        return round(345 + (SM_CLOCK_MAX_MHZ - 345) * min(1.0, 3 * self._load(index, state)))

    def nvmlDeviceGetFanSpeed(self, handle: SimHandle) -> int:
        index, state = self._gpu(handle, "nvmlDeviceGetFanSpeed")
        return max(30, min(100, round(30 + 1.2 * (self._temperature(index, state) - 35))))

    def nvmlDeviceGetPerformanceState(self, handle: SimHandle) -> int:
        index, state = self._gpu(handle, "nvmlDeviceGetPerformanceState")
        return 0 if self._load(index, state) > 0.05 else 8

    def nvmlDeviceGetCurrentClocksEventReasons(self, handle: SimHandle) -> int:
        index, state = self._gpu(handle, "nvmlDeviceGetCurrentClocksEventReasons")
        reasons = 0
        if self._load(index, state) < 0.05:
            reasons |= pynvml.nvmlClocksEventReasonGpuIdle
        if state.has("overheat"):
            reasons |= pynvml.nvmlClocksEventReasonHwThermalSlowdown | pynvml.nvmlClocksEventReasonSwThermalSlowdown
        if state.has("thermal-throttle"):
            reasons |= pynvml.nvmlClocksEventReasonSwThermalSlowdown
        return reasons

    nvmlDeviceGetCurrentClocksThrottleReasons = nvmlDeviceGetCurrentClocksEventReasons

    def nvmlDeviceGetViolationStatus(self, handle: SimHandle, policy: int) -> pynvml.c_nvmlViolationTime_t:
        index, state = self._gpu(handle, "nvmlDeviceGetViolationStatus")
        with self._lock:
            self._advance(index, state)
            spent = self._violation_ns(state, policy)
        return pynvml.c_nvmlViolationTime_t(referenceTime=int(self.clock() * 1e6), violationTime=spent)

    @staticmethod
    def _violation_ns(state: F.GpuState, policy: int) -> int:
        """Time under a clock-limiting policy (ns); the simulator throttles only for heat."""
        return int(state.thermal_violation_ns) if policy == pynvml.NVML_PERF_POLICY_THERMAL else 0

