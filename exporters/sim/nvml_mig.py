"""MIG calls of the simulated NVML (a mixin of SimulatedNvml).

GPUs listed in `mig_gpus` ({gpu index: instance count}) run in MIG mode with that many equal
instances; each instance has its own handle, `MIG-...` UUID and memory use. The other GPUs answer
MIG mode "disabled", as a GPU without MIG configured does.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pynvml

from vigil.exporters.sim.nvml_health import raise_nvml

MAX_MIG_INSTANCES = 7


@dataclass(frozen=True, eq=False)
class SimMigHandle:
    """Handle of one MIG instance; `parent` is the GPU's own handle."""

    parent: Any
    slot: int


class MigCalls:
    """nvmlDeviceGetMigMode and friends; memory and UUID of MIG handles."""

    def _mig_handles(self, index: int) -> list[SimMigHandle]:
        handles = self._mig_cache.get(index)
        if handles is None:
            handles = [SimMigHandle(self._handles[index], slot) for slot in range(self.mig_gpus.get(index, 0))]
            self._mig_cache[index] = handles
        return handles

    def nvmlDeviceGetMigMode(self, handle: Any) -> list[int]:
        index, _ = self._gpu(handle, "nvmlDeviceGetMigMode")
        mode = pynvml.NVML_DEVICE_MIG_ENABLE if index in self.mig_gpus else pynvml.NVML_DEVICE_MIG_DISABLE
        return [mode, mode]

    def nvmlDeviceGetMaxMigDeviceCount(self, handle: Any) -> int:
        self._gpu(handle, "nvmlDeviceGetMaxMigDeviceCount")
        return MAX_MIG_INSTANCES

    def nvmlDeviceGetMigDeviceHandleByIndex(self, handle: Any, slot: int) -> SimMigHandle:
        index, _ = self._gpu(handle, "nvmlDeviceGetMigDeviceHandleByIndex")
        handles = self._mig_handles(index)
        if not 0 <= slot < len(handles):
            raise_nvml(pynvml.NVML_ERROR_NOT_FOUND)
        return handles[slot]

    def nvmlDeviceIsMigDeviceHandle(self, handle: Any) -> bool:
        return isinstance(handle, SimMigHandle)

    def nvmlDeviceGetDeviceHandleFromMigDeviceHandle(self, handle: Any) -> Any:
        if not isinstance(handle, SimMigHandle):
            raise_nvml(pynvml.NVML_ERROR_INVALID_ARGUMENT)
        return handle.parent

    def _mig_memory(self, handle: SimMigHandle) -> Any:
        index, state = self._gpu(handle.parent, "nvmlDeviceGetMemoryInfo")
        total = self.memory_total // MAX_MIG_INSTANCES // 1024**2 * 1024**2
        used = int(total * min(0.95, 0.9 * self._load(index, state) * (1 + handle.slot) / MAX_MIG_INSTANCES * 2))
        return pynvml.c_nvmlMemory_t(total=total, free=total - used, used=used)
