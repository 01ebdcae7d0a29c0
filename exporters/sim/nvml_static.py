"""Identity and fixed properties of a simulated GPU (a mixin of SimulatedNvml): name, UUID, serial,
PCI location, architecture, limits. These answer the same every time, except that a lost GPU raises
like every other call (the host class's `_gpu` check).
"""

from __future__ import annotations

from typing import Any

import pynvml

from vigil.exporters.sim.identity import device_serial, device_uuid, mig_uuid, pci_bus
from vigil.exporters.sim.nvml_health import raise_nvml
from vigil.exporters.sim.nvml_mig import SimMigHandle

GPU_NAME = "NVIDIA H100 80GB HBM3"
SM_CLOCK_MAX_MHZ, MEM_CLOCK_MHZ = 1980, 2619
POWER_LIMIT_W = 700.0
SLOWDOWN_C, SHUTDOWN_C, GPU_MAX_C, MEM_MAX_C = 90, 92, 87, 95
BAR1_TOTAL = 128 * 1024**3


class StaticCalls:
    """pynvml calls whose answers do not depend on load or faults."""

    def nvmlDeviceGetHandleByUUID(self, uuid: str) -> Any:
        self._check_init()
        for handle in self._handles:
            if device_uuid(self.node, handle.index) == uuid:
                return handle
        raise_nvml(pynvml.NVML_ERROR_NOT_FOUND)

    def nvmlDeviceGetUUID(self, handle: Any) -> str:
        if isinstance(handle, SimMigHandle):
            return mig_uuid(self.node, self._gpu(handle.parent, "nvmlDeviceGetUUID")[0], handle.slot)
        index, _ = self._gpu(handle, "nvmlDeviceGetUUID")
        return device_uuid(self.node, index)

    def nvmlDeviceGetName(self, handle: Any) -> str:
        self._gpu(handle, "nvmlDeviceGetName")
        return GPU_NAME

    def nvmlDeviceGetSerial(self, handle: Any) -> str:
        index, _ = self._gpu(handle, "nvmlDeviceGetSerial")
        return device_serial(self.node, index)

    def nvmlDeviceGetIndex(self, handle: Any) -> int:
        return self._gpu(handle, "nvmlDeviceGetIndex")[0]

    def nvmlDeviceGetPciInfo(self, handle: Any) -> pynvml.nvmlPciInfo_t:
        index, _ = self._gpu(handle, "nvmlDeviceGetPciInfo")
        bus = pci_bus(index)
        info = pynvml.nvmlPciInfo_t()
        info.busId = f"00000000:{bus:02X}:00.0".encode()
        info.busIdLegacy = f"0000:{bus:02X}:00.0".encode()
        info.domain, info.bus, info.device = 0, bus, 0
        info.pciDeviceId, info.pciSubSystemId = 0x233010DE, 0x16C110DE
        return info

    def nvmlDeviceGetPersistenceMode(self, handle: Any) -> int:
        self._gpu(handle, "nvmlDeviceGetPersistenceMode")
        return pynvml.NVML_FEATURE_ENABLED

    def nvmlDeviceGetHandleByPciBusId(self, bus_id: str) -> Any:
        self._check_init()
        for handle in self._handles:
            if self.nvmlDeviceGetPciInfo(handle).busId.lower() == str(bus_id).lower():
                return handle
        raise_nvml(pynvml.NVML_ERROR_NOT_FOUND)

    def nvmlDeviceGetMinorNumber(self, handle: Any) -> int:
        return self._gpu(handle, "nvmlDeviceGetMinorNumber")[0]

    def nvmlDeviceGetArchitecture(self, handle: Any) -> int:
        self._gpu(handle, "nvmlDeviceGetArchitecture")
        return pynvml.NVML_DEVICE_ARCH_HOPPER

    def nvmlDeviceGetCudaComputeCapability(self, handle: Any) -> tuple[int, int]:
        self._gpu(handle, "nvmlDeviceGetCudaComputeCapability")
        return (9, 0)

    def nvmlDeviceGetEccMode(self, handle: Any) -> list[int]:
        self._gpu(handle, "nvmlDeviceGetEccMode")
        return [pynvml.NVML_FEATURE_ENABLED, pynvml.NVML_FEATURE_ENABLED]

    def nvmlDeviceGetMaxClockInfo(self, handle: Any, clock_type: int) -> int:
        self._gpu(handle, "nvmlDeviceGetMaxClockInfo")
        return MEM_CLOCK_MHZ if clock_type == pynvml.NVML_CLOCK_MEM else SM_CLOCK_MAX_MHZ

    def nvmlDeviceGetPowerManagementLimit(self, handle: Any) -> int:
        self._gpu(handle, "nvmlDeviceGetPowerManagementLimit")
        return round(POWER_LIMIT_W * 1000)

    def nvmlDeviceGetTemperatureThreshold(self, handle: Any, threshold: int) -> int:
        self._gpu(handle, "nvmlDeviceGetTemperatureThreshold")
        limits = {pynvml.NVML_TEMPERATURE_THRESHOLD_SHUTDOWN: SHUTDOWN_C,
                  pynvml.NVML_TEMPERATURE_THRESHOLD_SLOWDOWN: SLOWDOWN_C,
                  pynvml.NVML_TEMPERATURE_THRESHOLD_GPU_MAX: GPU_MAX_C,
                  pynvml.NVML_TEMPERATURE_THRESHOLD_MEM_MAX: MEM_MAX_C}
        if threshold not in limits:
            raise_nvml(pynvml.NVML_ERROR_NOT_SUPPORTED)
        return limits[threshold]

    def nvmlDeviceGetBAR1MemoryInfo(self, handle: Any) -> Any:
        self._gpu(handle, "nvmlDeviceGetBAR1MemoryInfo")
        used = 64 * 1024**2
        return pynvml.c_nvmlBAR1Memory_t(bar1Total=BAR1_TOTAL, bar1Free=BAR1_TOTAL - used, bar1Used=used)

    def nvmlDeviceGetGraphicsRunningProcesses(self, handle: Any) -> list[Any]:
        self._gpu(handle, "nvmlDeviceGetGraphicsRunningProcesses")
        return []  # a training node runs no graphics
