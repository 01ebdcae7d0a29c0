"""Reliability, field-value, process and event calls of the simulated NVML (a mixin of SimulatedNvml).

Kept apart from `exporters.sim.nvml` so each module stays small; the methods use the host class's
`_gpu` (checks the handle and faults), `_lock`, `_advance`, `_load` and `_states`.
"""

from __future__ import annotations

import ctypes
import queue
import struct
import zlib
from dataclasses import dataclass
from typing import Any

import pynvml

MIB = 1024**2
FIELD_MEMORY_TEMP = 82
FIELD_TOTAL_ENERGY = 83
FIELD_PCIE_REPLAY = 94
FIELD_RECOVERY_ACTION = 230
NVLINK_DL_FIELDS = {161: 0, 162: 1, 163: 2}  # replay, recovery, CRC (flit) per link (scopeId = link)
VIOLATION_FIELDS = {getattr(pynvml, f"NVML_PERF_POLICY_{name}"): getattr(pynvml, f"NVML_FI_DEV_PERF_POLICY_{name}")
                    for name in ("POWER", "THERMAL", "SYNC_BOOST", "BOARD_LIMIT", "LOW_UTILIZATION", "RELIABILITY")}
UINT_FIELDS = {FIELD_MEMORY_TEMP, FIELD_RECOVERY_ACTION, 144, 145, 31}
# c_nvmlFieldValue_t as bytes: fieldId, scopeId, timestamp, latencyUsec, valueType, nvmlReturn, value
# (an unsigned int value sits in the union's first 4 bytes: little-endian Q packs it there too)
_FIELD_RECORD = struct.Struct("<IIqqIIQ")
assert _FIELD_RECORD.size == ctypes.sizeof(pynvml.c_nvmlFieldValue_t)


def raise_nvml(code: int) -> None:
    """Raise pynvml's own exception subclass for `code`, as pynvml does."""
    raise pynvml.NVMLError(code)


@dataclass
class SimEventData:
    """Look-alike of pynvml's c_nvmlEventData_t (a ctypes struct cannot hold a Python handle)."""

    device: Any
    eventType: int
    eventData: int
    gpuInstanceId: int = 0xFFFFFFFF
    computeInstanceId: int = 0xFFFFFFFF


class SimEventSet:
    """An NVML event set: registered masks per GPU index and a queue of delivered events."""

    def __init__(self) -> None:
        self.masks: dict[int, int] = {}
        self.events: queue.Queue[SimEventData] = queue.Queue()
        self.valid = True  # False once NVML is shut down: the set belongs to the old driver session


SUPPORTED_EVENTS = (pynvml.nvmlEventTypeSingleBitEccError | pynvml.nvmlEventTypeDoubleBitEccError
                    | pynvml.nvmlEventTypePState | pynvml.nvmlEventTypeXidCriticalError
                    | pynvml.nvmlEventTypeClock)


class HealthCalls:
    """ECC, row remapping, PCIe/NVLink errors, field values, processes and XID events."""

    # -- ECC and memory health ----------------------------------------------------------------------
    def nvmlDeviceGetTotalEccErrors(self, handle: Any, error_type: int, counter_type: int) -> int:
        _, state = self._gpu(handle, "nvmlDeviceGetTotalEccErrors")
        with self._lock:
            self._advance(handle.index, state)
            volatile = counter_type == pynvml.NVML_VOLATILE_ECC
            if error_type == pynvml.NVML_MEMORY_ERROR_TYPE_CORRECTED:
                return int(state.ecc_corrected_volatile if volatile else state.ecc_corrected_aggregate)
            if error_type == pynvml.NVML_MEMORY_ERROR_TYPE_UNCORRECTED:
                return state.ecc_uncorrected_volatile if volatile else state.ecc_uncorrected_aggregate
        raise_nvml(pynvml.NVML_ERROR_INVALID_ARGUMENT)

    def nvmlDeviceGetRemappedRows(self, handle: Any) -> tuple[int, int, int, int]:
        _, state = self._gpu(handle, "nvmlDeviceGetRemappedRows")
        return (state.remapped_corrected, state.remapped_uncorrected, state.remap_pending, state.remap_failure)

    def nvmlDeviceGetRetiredPages(self, handle: Any, cause: int) -> list[int]:
        self._gpu(handle, "nvmlDeviceGetRetiredPages")
        return []  # Hopper retires memory by row remapping, not page retirement

    def nvmlDeviceGetRetiredPagesPendingStatus(self, handle: Any) -> int:
        self._gpu(handle, "nvmlDeviceGetRetiredPagesPendingStatus")
        return pynvml.NVML_FEATURE_DISABLED

    def nvmlDeviceGetPcieReplayCounter(self, handle: Any) -> int:
        _, state = self._gpu(handle, "nvmlDeviceGetPcieReplayCounter")
        return state.pcie_replays

    def nvmlDeviceGetNvLinkState(self, handle: Any, link: int) -> int:
        self._gpu(handle, "nvmlDeviceGetNvLinkState")
        if not 0 <= link < self.nvlinks:
            raise_nvml(pynvml.NVML_ERROR_INVALID_ARGUMENT)
        return pynvml.NVML_FEATURE_ENABLED

    def nvmlDeviceGetNvLinkErrorCounter(self, handle: Any, link: int, counter: int) -> int:
        _, state = self._gpu(handle, "nvmlDeviceGetNvLinkErrorCounter")
        if not 0 <= link < self.nvlinks or not 0 <= counter < pynvml.NVML_NVLINK_ERROR_COUNT:
            raise_nvml(pynvml.NVML_ERROR_INVALID_ARGUMENT)
        with self._lock:
            self._advance(handle.index, state)
            return int(state.nvlink_errors.get((link, counter), 0))

    # -- field values (batched reads) ---------------------------------------------------------------
    def nvmlDeviceGetFieldValues(self, handle: Any, field_ids: list[Any]) -> Any:
        index, state = self._gpu(handle, "nvmlDeviceGetFieldValues")
        now_us = int(self.clock() * 1e6)
        with self._lock:
            self._advance(index, state)
            answers = self._field_answers(index, state)
            links = {link: [int(state.nvlink_errors.get((link, c), 0)) for c in range(3)]
                     for link in range(self.nvlinks)}
        # pack the records as bytes and hand back pynvml's own ctypes array: setting ~70 structs field
        # by field through pynvml's Python-level __setattr__ cost more than the rest of the simulator
        buffer = bytearray(_FIELD_RECORD.size * len(field_ids))
        for i, field_id in enumerate(field_ids):
            field_id, scope = field_id if isinstance(field_id, tuple) else (field_id, 0)
            if field_id in NVLINK_DL_FIELDS:
                answer = links[scope][NVLINK_DL_FIELDS[field_id]] if scope in links else None
            else:
                answer = answers.get(field_id)
            kind = pynvml.NVML_VALUE_TYPE_UNSIGNED_INT if field_id in UINT_FIELDS else pynvml.NVML_VALUE_TYPE_UNSIGNED_LONG_LONG
            status = pynvml.NVML_SUCCESS if answer is not None else pynvml.NVML_ERROR_NOT_SUPPORTED
            _FIELD_RECORD.pack_into(buffer, i * _FIELD_RECORD.size, field_id, scope, now_us, 0, kind, status, answer or 0)
        return (pynvml.c_nvmlFieldValue_t * len(field_ids)).from_buffer_copy(buffer)

    def _field_answers(self, index: int, state: Any) -> dict[int, int]:
        return {
            3: int(state.ecc_corrected_volatile), 4: state.ecc_uncorrected_volatile,
            5: int(state.ecc_corrected_aggregate), 6: state.ecc_uncorrected_aggregate,
            FIELD_MEMORY_TEMP: round(self._temperature(index, state) - 6),
            FIELD_TOTAL_ENERGY: int(state.energy_mj),
            FIELD_PCIE_REPLAY: state.pcie_replays,
            142: state.remapped_corrected, 143: state.remapped_uncorrected,
            144: state.remap_pending, 145: state.remap_failure,
            FIELD_RECOVERY_ACTION: state.recovery_action,
            **{field: self._violation_ns(state, policy) for policy, field in VIOLATION_FIELDS.items()},
            # retired pages: none on Hopper (rows are remapped); refused with the calls, as a real H100 does
            **({} if "nvmlDeviceGetRetiredPages" in self.unsupported else {29: 0, 30: 0, 31: 0}),
        }

    # -- processes ----------------------------------------------------------------------------------
    def _pid(self, index: int) -> int:
        return 20_000 + zlib.crc32(f"{self.node}/{index}/pid".encode()) % 40_000

    def nvmlDeviceGetComputeRunningProcesses(self, handle: Any) -> list[Any]:
        index, state = self._gpu(handle, "nvmlDeviceGetComputeRunningProcesses")
        load = self._load(index, state)
        pid = self._pid(index)
        if self.jobs is not None and self.jobs.manages(self.node):  # the job's rank, idle or hung included
            held = self.job_of(index)
            if held is None:
                return []
            pid, used = held.pid, int(self.memory_total * self._memory_share(index, state)) // MIB * MIB
        elif load < 0.05:
            return []
        else:
            used = int(70_000 * MIB * load) // MIB * MIB
        # one training process; on a MIG GPU it runs in every instance and NVML lists it once per instance
        instances = range(self.mig_gpus[index]) if index in self.mig_gpus else [0xFFFFFFFF]
        return [pynvml.nvmlStructToFriendlyObject(pynvml.c_nvmlProcessInfo_t(
                    pid=pid, usedGpuMemory=used // len(instances), gpuInstanceId=gi,
                    computeInstanceId=0 if gi != 0xFFFFFFFF else gi)) for gi in instances]

    def nvmlDeviceGetProcessUtilization(self, handle: Any, last_seen_us: int) -> list[Any]:
        index, state = self._gpu(handle, "nvmlDeviceGetProcessUtilization")
        load = self._load(index, state)
        if load < 0.05:
            raise_nvml(pynvml.NVML_ERROR_NOT_FOUND)  # what NVML says when no process ran since the timestamp
        held = self.job_of(index)
        sample = pynvml.c_nvmlProcessUtilizationSample_t(
            pid=self._pid(index) if held is None else held.pid, timeStamp=int(self.clock() * 1e6), smUtil=round(100 * load),
            memUtil=round(60 * load), encUtil=0, decUtil=0)
        return [sample]

    # -- events -------------------------------------------------------------------------------------
    def nvmlDeviceGetSupportedEventTypes(self, handle: Any) -> int:
        self._gpu(handle, "nvmlDeviceGetSupportedEventTypes")
        return SUPPORTED_EVENTS

    def nvmlEventSetCreate(self) -> SimEventSet:
        self._check_init()
        event_set = SimEventSet()
        with self._lock:
            self._event_sets.append(event_set)
        return event_set

    def nvmlDeviceRegisterEvents(self, handle: Any, mask: int, event_set: SimEventSet) -> None:
        index, _ = self._gpu(handle, "nvmlDeviceRegisterEvents")
        if mask & ~SUPPORTED_EVENTS:
            raise_nvml(pynvml.NVML_ERROR_NOT_SUPPORTED)
        with self._lock:
            event_set.masks[index] = event_set.masks.get(index, 0) | mask

    def nvmlEventSetWait(self, event_set: SimEventSet, timeout_ms: int) -> SimEventData:
        self._check_init()
        try:
            event = event_set.events.get(timeout=max(0, timeout_ms) / 1000)
        except queue.Empty:
            event = None
        if not event_set.valid:
            raise_nvml(pynvml.NVML_ERROR_UNINITIALIZED)
        if event is None:
            raise_nvml(pynvml.NVML_ERROR_TIMEOUT)
        return event

    def nvmlEventSetFree(self, event_set: SimEventSet) -> None:
        with self._lock:
            if event_set in self._event_sets:
                self._event_sets.remove(event_set)
