"""Read one GPU through NVML into snapshot rows (no Prometheus types here).

`GpuReader.read` calls NVML for every field of one GPU and appends `(label values, value)` rows under
metric names from `exporters.gpu_specs`. An error that means "this field is not available"
(NOT_SUPPORTED, NO_PERMISSION, FUNCTION_NOT_FOUND, ...) skips the field; an error that means the GPU
is gone (GPU_IS_LOST, RESET_REQUIRED, GPU_NOT_FOUND) raises `GpuLost` so the caller exports
`vigil_gpu_up 0`. Every error is counted by name for `vigil_exporter_nvml_errors_total`.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any, Callable

from vigil.exporters import gpu_fields as FV

Rows = dict[str, list[tuple[tuple[str, ...], float]]]

MAX_NVLINKS = 18
# nvmlDeviceGetNvLinkErrorCounter counters (fallback when the batched DL fields are not supported)
NVLINK_COUNTERS = ((0, "replay"), (1, "recovery"), (2, "crc_flit"), (3, "crc_data"))
NVLINK_ALL = "all"  # the link label of a per-GPU total, as the DCGM backend labels DCGM's own sums
CLOCK_EVENT_REASONS = (  # (bit, reason label) of nvmlDeviceGetCurrentClocksEventReasons
    (0x1, "gpu_idle"), (0x2, "applications_clocks"), (0x4, "sw_power_cap"), (0x8, "hw_slowdown"),
    (0x10, "sync_boost"), (0x20, "sw_thermal"), (0x40, "hw_thermal"), (0x80, "hw_power_brake"),
)
VIOLATION_POLICIES = ((0, "power"), (1, "thermal"), (2, "sync_boost"), (3, "board_limit"),
                      (4, "low_utilization"), (5, "reliability"))


class GpuLost(Exception):
    """NVML reports that the GPU is gone (fallen off the bus, reset required, not found)."""


def error_names(nvml: Any) -> dict[int, str]:
    """NVML error code -> lower-case name (15 -> "gpu_is_lost") from the library's own constants."""
    return {getattr(nvml, n): n[len("NVML_ERROR_"):].lower() for n in dir(nvml) if n.startswith("NVML_ERROR_")}


def text(value: Any) -> str:
    """NVML strings arrive as str (decorated calls) or bytes (struct fields such as busId)."""
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)


@dataclass
class GpuMemo:
    """What the collector remembers about one GPU across cycles."""

    index: int
    handle: Any = None
    uuid: str = ""
    info: tuple[str, ...] | None = None  # name, driver, cuda, pci_bus_id, serial
    nvlinks: list[int] | None = None  # active links, discovered once
    last_process_ts: int = 0
    up: bool = False
    processes: tuple[tuple[int, int | None], ...] = ()  # (host PID, used bytes or None) at the last read


class GpuReader:
    """Reads GPUs through the given NVML module (`pynvml` or a simulator with the same functions)."""

    def __init__(self, nvml: Any, node: str, errors: Counter, *, nvlink_per_link: bool = False) -> None:
        self.nvml = nvml
        self.nvlink_per_link = nvlink_per_link
        self.node = node
        self.errors = errors
        self._names = error_names(nvml)
        self._lost_codes = {nvml.NVML_ERROR_GPU_IS_LOST, nvml.NVML_ERROR_RESET_REQUIRED,
                            nvml.NVML_ERROR_GPU_NOT_FOUND}
        # answers that stay the same for the whole NVML session: the call is not made again
        self._permanent_codes = {nvml.NVML_ERROR_NOT_SUPPORTED, nvml.NVML_ERROR_FUNCTION_NOT_FOUND}
        self._refused: set[tuple] = set()

    def forget_refused(self) -> None:
        """A new NVML session (a reloaded driver may support more): ask every function again."""
        self._refused.clear()

    def error_name(self, error: Exception) -> str:
        code = getattr(error, "value", -1)
        return self._names.get(code, str(code))

    def call(self, fn_name: str, *args: Any, count: bool = True) -> Any:
        """Call an NVML function; None when the field is unavailable; GpuLost when the GPU is gone.

        A call the GPU refused as NOT_SUPPORTED or FUNCTION_NOT_FOUND is remembered (per function, GPU
        handle and arguments) and answered None without asking NVML again in this session, and counted
        once: on a real H100 such refusals (fan speed, retired pages) cost 0.5 to 1 ms each, every cycle.
        A lost GPU or a new NVML session clears what was remembered."""
        key = (fn_name, *(a if isinstance(a, (int, str)) else id(a) for a in args))
        if key in self._refused:
            return None
        try:
            return getattr(self.nvml, fn_name)(*args)
        except self.nvml.NVMLError as error:
            if self.refusal(fn_name, error, count=count):
                self._refused.add(key)
            return None

    def refusal(self, fn_name: str, error: Exception, *, count: bool = True) -> bool:
        """Count an NVML error of `fn_name`; raise GpuLost when it says the GPU is gone; True when it is a
        refusal that holds for the whole NVML session (NOT_SUPPORTED, FUNCTION_NOT_FOUND)."""
        code = getattr(error, "value", -1)
        if count:
            self.errors[self.error_name(error)] += 1
        if code in self._lost_codes:
            self._refused.clear()  # a GPU that comes back (reset, MIG mode changed) is asked afresh
            raise GpuLost(fn_name) from error
        return code in self._permanent_codes

    def read(self, memo: GpuMemo, rows: Rows, driver: str, cuda: str) -> None:
        """Append every available field of the GPU to `rows`; raises GpuLost."""
        h = memo.handle
        call = self.call
        if not memo.uuid:
            memo.uuid = text(call("nvmlDeviceGetUUID", h) or "")
        base = (self.node, str(memo.index), memo.uuid)

        def put(name: str, value: float | None, *labels: str) -> None:
            if value is not None:
                rows.setdefault(name, []).append((base + labels, float(value)))

        if memo.info is None:
            pci = call("nvmlDeviceGetPciInfo", h)
            memo.info = (text(call("nvmlDeviceGetName", h) or ""), driver, cuda,
                         text(pci.busId) if pci is not None else "", text(call("nvmlDeviceGetSerial", h) or ""))
        util = call("nvmlDeviceGetUtilizationRates", h)
        if util is not None:
            put("vigil_gpu_utilization_ratio", util.gpu / 100)
            put("vigil_gpu_memory_utilization_ratio", util.memory / 100)
        mem = call("nvmlDeviceGetMemoryInfo", h)
        if mem is not None:
            put("vigil_gpu_memory_used_bytes", mem.used)
            put("vigil_gpu_memory_free_bytes", mem.free)
            put("vigil_gpu_memory_total_bytes", mem.total)
        if memo.nvlinks is None:  # discover once: probing absent links is expected to fail, not counted
            memo.nvlinks = [link for link in range(MAX_NVLINKS)
                            if self.call("nvmlDeviceGetNvLinkState", h, link, count=False)]
        fields = FV.parse(call("nvmlDeviceGetFieldValues", h, FV.request(memo.nvlinks)))
        put("vigil_gpu_temperature_celsius", call("nvmlDeviceGetTemperature", h, self.nvml.NVML_TEMPERATURE_GPU), "gpu")
        put("vigil_gpu_temperature_celsius", fields.get((FV.MEMORY_TEMP, 0)), "memory")
        put("vigil_gpu_recovery_action", fields.get((FV.RECOVERY_ACTION, 0)))
        put("vigil_gpu_power_watts", _scaled(call("nvmlDeviceGetPowerUsage", h), 1e-3))
        put("vigil_gpu_power_limit_watts", _scaled(call("nvmlDeviceGetEnforcedPowerLimit", h), 1e-3))
        energy = fields.get((FV.TOTAL_ENERGY_MJ, 0))
        if energy is None:
            energy = call("nvmlDeviceGetTotalEnergyConsumption", h)
        put("vigil_gpu_energy_joules_total", _scaled(energy, 1e-3))
        put("vigil_gpu_clock_hertz", _scaled(call("nvmlDeviceGetClockInfo", h, self.nvml.NVML_CLOCK_SM), 1e6), "sm")
        put("vigil_gpu_clock_hertz", _scaled(call("nvmlDeviceGetClockInfo", h, self.nvml.NVML_CLOCK_MEM), 1e6), "memory")
        put("vigil_gpu_fan_speed_ratio", _scaled(call("nvmlDeviceGetFanSpeed", h), 1e-2))
        put("vigil_gpu_performance_state", call("nvmlDeviceGetPerformanceState", h))
        put("vigil_gpu_persistence_mode", call("nvmlDeviceGetPersistenceMode", h))
        self._read_memory_health(h, fields, put)
        self._read_links(memo, fields, put)
        self._read_clock_events(h, fields, put)
        self._read_processes(memo, put)

    def _read_memory_health(self, h: Any, fields: FV.FieldValues, put: Callable[..., None]) -> None:
        nvml, call = self.nvml, self.call

        def field_or_call(field: int, fn_name: str, *args: Any) -> Any:
            value = fields.get((field, 0))
            return value if value is not None else call(fn_name, h, *args)

        error_types = {"corrected": nvml.NVML_MEMORY_ERROR_TYPE_CORRECTED,
                       "uncorrected": nvml.NVML_MEMORY_ERROR_TYPE_UNCORRECTED}
        counter_types = {"volatile": nvml.NVML_VOLATILE_ECC, "aggregate": nvml.NVML_AGGREGATE_ECC}
        for (error_label, counter_label), field in FV.ECC.items():
            put("vigil_gpu_ecc_errors_total", field_or_call(field, "nvmlDeviceGetTotalEccErrors",
                                                            error_types[error_label], counter_types[counter_label]),
                error_label, counter_label)
        for cause, (label, field) in enumerate(FV.RETIRED.items()):
            count = fields.get((field, 0))
            if count is None:
                pages = call("nvmlDeviceGetRetiredPages", h, cause)
                count = None if pages is None else len(pages)
            put("vigil_gpu_retired_pages_total", count, label)
        put("vigil_gpu_retired_pages_pending",
            field_or_call(FV.RETIRED_PENDING, "nvmlDeviceGetRetiredPagesPendingStatus"))
        remapped = tuple(fields.get((f, 0)) for f in (FV.REMAPPED_CORRECTED, FV.REMAPPED_UNCORRECTED,
                                                      FV.REMAPPED_PENDING, FV.REMAPPED_FAILURE))
        if None in remapped:
            remapped = call("nvmlDeviceGetRemappedRows", h)
        if remapped is not None:
            corrected, uncorrected, pending, failure = remapped
            put("vigil_gpu_remapped_rows_total", corrected, "corrected")
            put("vigil_gpu_remapped_rows_total", uncorrected, "uncorrected")
            put("vigil_gpu_remap_pending", pending)
            put("vigil_gpu_remap_failure", failure)
        put("vigil_gpu_pcie_replays_total", field_or_call(FV.PCIE_REPLAY, "nvmlDeviceGetPcieReplayCounter"))

    def _read_links(self, memo: GpuMemo, fields: FV.FieldValues, put: Callable[..., None]) -> None:
        """Per-GPU NVLink error totals (link="all", summed over the active links) unless the reader was
        made with `nvlink_per_link`: 18 links x 3 counters x 8 GPUs is 432 series a node otherwise."""
        totals: dict[str, float] = {}
        for link in memo.nvlinks or ():
            counts = {label: fields.get((field, link)) for label, field in FV.NVLINK_DL.items()}
            if None in counts.values():
                counts = {label: self.call("nvmlDeviceGetNvLinkErrorCounter", memo.handle, link, counter)
                          for counter, label in NVLINK_COUNTERS}
            for label, count in counts.items():
                if count is None:
                    continue
                if self.nvlink_per_link:
                    put("vigil_gpu_nvlink_errors_total", count, str(link), label)
                else:
                    totals[label] = totals.get(label, 0.0) + count
        for label, total in totals.items():
            put("vigil_gpu_nvlink_errors_total", total, NVLINK_ALL, label)

    def _read_clock_events(self, h: Any, fields: FV.FieldValues, put: Callable[..., None]) -> None:
        reasons = self.call("nvmlDeviceGetCurrentClocksEventReasons", h)
        if reasons is not None:
            for bit, label in CLOCK_EVENT_REASONS:
                put("vigil_gpu_clock_event_active", 1 if reasons & bit else 0, label)
        for policy, label in VIOLATION_POLICIES:
            spent_ns = fields.get((FV.VIOLATION[policy], 0))
            if spent_ns is None:  # a driver without the field: the dedicated call
                violation = self.call("nvmlDeviceGetViolationStatus", h, policy)
                spent_ns = None if violation is None else violation.violationTime
            if spent_ns is not None:
                put("vigil_gpu_clock_event_seconds_total", spent_ns / 1e9, label)

    def _read_processes(self, memo: GpuMemo, put: Callable[..., None]) -> None:
        h = memo.handle
        # one series per PID: a process in several MIG instances is listed once per instance
        memory: dict[int, int | None] = {}
        for proc in self.call("nvmlDeviceGetComputeRunningProcesses", h) or ():
            if proc.usedGpuMemory is None:  # None where the driver cannot tell (WDDM)
                memory.setdefault(proc.pid, None)
            else:
                memory[proc.pid] = (memory.get(proc.pid) or 0) + proc.usedGpuMemory
        memo.processes = tuple(sorted(memory.items()))
        for pid, used in memo.processes:
            put("vigil_gpu_process_memory_bytes", used, str(pid))
        # NOT_FOUND here means "no process ran since the timestamp": normal, not counted
        latest: dict[int, Any] = {}
        for sample in self.call("nvmlDeviceGetProcessUtilization", h, memo.last_process_ts, count=False) or ():
            if sample.pid not in latest or sample.timeStamp > latest[sample.pid].timeStamp:
                latest[sample.pid] = sample
        for pid, sample in sorted(latest.items()):
            put("vigil_gpu_process_sm_utilization_ratio", sample.smUtil / 100, str(pid))
            memo.last_process_ts = max(memo.last_process_ts, sample.timeStamp)
        mig = self.call("nvmlDeviceGetMigMode", h)
        if mig is not None:
            put("vigil_gpu_mig_mode", mig[0])
            if mig[0]:
                self._read_mig(h, put)

    def _read_mig(self, h: Any, put: Callable[..., None]) -> None:
        for slot in range(self.call("nvmlDeviceGetMaxMigDeviceCount", h) or 0):
            mig = self.call("nvmlDeviceGetMigDeviceHandleByIndex", h, slot, count=False)
            if mig is None:
                continue
            mem = self.call("nvmlDeviceGetMemoryInfo", mig)
            if mem is not None:
                put("vigil_gpu_mig_instance_memory_used_bytes", mem.used, text(self.call("nvmlDeviceGetUUID", mig) or ""))


def _scaled(value: float | None, factor: float) -> float | None:
    return None if value is None else value * factor
