"""The simulated NVML answers like pynvml: same call shapes, pynvml's structs and exception classes."""

from __future__ import annotations

import pynvml
import pytest

from sim_clock import FakeClock
from vigil.exporters.sim.faults import Fault, FaultError, parse_fault
from vigil.exporters.sim.identity import device_uuid
from vigil.exporters.sim.load import gpu_load
from vigil.exporters.sim.nvml import MEMORY_TOTAL, SimulatedNvml

T0 = 1_763_726_400.0  # a Friday at 12:00 UTC: GPUs busy


@pytest.fixture()
def busy_clock() -> FakeClock:
    return FakeClock(T0)


@pytest.fixture()
def nvml(busy_clock: FakeClock) -> SimulatedNvml:
    sim = SimulatedNvml("node-2", 8, clock=busy_clock)
    sim.nvmlInit()
    return sim


def fault(name: str, gpu: int = 3, **params: int) -> Fault:
    return Fault(name, "node-2", gpu, T0, params)


def test_values_follow_load_and_use_pynvml_structs(nvml: SimulatedNvml, busy_clock: FakeClock) -> None:
    h = nvml.nvmlDeviceGetHandleByIndex(2)
    util = nvml.nvmlDeviceGetUtilizationRates(h)
    assert isinstance(util, pynvml.c_nvmlUtilization_t)
    assert util.gpu == round(100 * gpu_load("node-2", 2, busy_clock.t))
    memory = nvml.nvmlDeviceGetMemoryInfo(h)
    assert isinstance(memory, pynvml.c_nvmlMemory_t)
    assert memory.total == MEMORY_TOTAL and memory.used + memory.free == memory.total
    assert 80 * 1024**3 > memory.total > 79 * 1024**3
    assert 35 <= nvml.nvmlDeviceGetTemperature(h, pynvml.NVML_TEMPERATURE_GPU) <= 80
    assert nvml.nvmlDeviceGetEnforcedPowerLimit(h) == 700_000
    assert nvml.nvmlDeviceGetUUID(h) == device_uuid("node-2", 2)
    assert nvml.nvmlDeviceGetPciInfo(h).busId.startswith("00000000:")


def test_static_properties_and_lookups(nvml: SimulatedNvml) -> None:
    h = nvml.nvmlDeviceGetHandleByIndex(5)
    assert nvml.nvmlDeviceGetHandleByPciBusId(nvml.nvmlDeviceGetPciInfo(h).busId) is h
    assert nvml.nvmlDeviceGetHandleByUUID(nvml.nvmlDeviceGetUUID(h)) is h
    with pytest.raises(pynvml.NVMLError_NotFound):  # as the real library answers an unknown UUID
        nvml.nvmlDeviceGetHandleByUUID("GPU-00000000-0000-0000-0000-000000000000")
    assert nvml.nvmlDeviceGetName(h) == "NVIDIA H100 80GB HBM3"
    assert nvml.nvmlDeviceGetArchitecture(h) == pynvml.NVML_DEVICE_ARCH_HOPPER
    assert nvml.nvmlDeviceGetCudaComputeCapability(h) == (9, 0)
    assert nvml.nvmlDeviceGetTemperatureThreshold(h, pynvml.NVML_TEMPERATURE_THRESHOLD_SLOWDOWN) == 90
    assert nvml.nvmlDeviceGetMaxClockInfo(h, pynvml.NVML_CLOCK_SM) >= nvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_SM)
    assert nvml.nvmlDeviceGetPowerManagementLimit(h) == nvml.nvmlDeviceGetEnforcedPowerLimit(h)
    bar1 = nvml.nvmlDeviceGetBAR1MemoryInfo(h)
    assert bar1.bar1Used + bar1.bar1Free == bar1.bar1Total
    nvml.inject(fault("xid79", gpu=5))
    with pytest.raises(pynvml.NVMLError_GpuIsLost):
        nvml.nvmlDeviceGetName(h)


def test_identity_is_deterministic_and_distinct() -> None:
    uuids = {device_uuid(f"node-{n}", g) for n in range(1, 5) for g in range(8)}
    assert len(uuids) == 32
    assert device_uuid("node-1", 0) == device_uuid("node-1", 0)
    assert all(u.startswith("GPU-") and len(u) == 40 for u in uuids)


def test_energy_counter_increases_with_time(nvml: SimulatedNvml, busy_clock: FakeClock) -> None:
    h = nvml.nvmlDeviceGetHandleByIndex(0)
    first = nvml.nvmlDeviceGetTotalEnergyConsumption(h)
    busy_clock.t += 10
    second = nvml.nvmlDeviceGetTotalEnergyConsumption(h)
    watts = nvml.nvmlDeviceGetPowerUsage(h) / 1000
    assert second - first == pytest.approx(watts * 10 * 1000, rel=0.2)


def test_errors_are_pynvml_classes(nvml: SimulatedNvml) -> None:
    with pytest.raises(pynvml.NVMLError_InvalidArgument):
        nvml.nvmlDeviceGetHandleByIndex(8)
    with pytest.raises(pynvml.NVMLError_FunctionNotFound):
        nvml.nvmlDeviceGetEncoderUtilization(nvml.nvmlDeviceGetHandleByIndex(0))
    event_set = nvml.nvmlEventSetCreate()
    with pytest.raises(pynvml.NVMLError_Timeout):
        nvml.nvmlEventSetWait(event_set, 1)
    nvml.nvmlShutdown()
    with pytest.raises(pynvml.NVMLError_Uninitialized):
        nvml.nvmlDeviceGetCount()


def test_xid79_loses_one_gpu_and_delivers_the_event(nvml: SimulatedNvml) -> None:
    handles = [nvml.nvmlDeviceGetHandleByIndex(i) for i in range(8)]
    event_set = nvml.nvmlEventSetCreate()
    for h in handles:
        nvml.nvmlDeviceRegisterEvents(h, pynvml.nvmlEventTypeXidCriticalError, event_set)
    nvml.inject(fault("xid79"))
    event = nvml.nvmlEventSetWait(event_set, 100)
    assert (event.device, event.eventType, event.eventData) == (handles[3], pynvml.nvmlEventTypeXidCriticalError, 79)
    with pytest.raises(pynvml.NVMLError_GpuIsLost):
        nvml.nvmlDeviceGetTemperature(handles[3], pynvml.NVML_TEMPERATURE_GPU)
    with pytest.raises(pynvml.NVMLError_GpuIsLost):
        nvml.nvmlDeviceGetHandleByIndex(3)
    assert nvml.nvmlDeviceGetTemperature(handles[4], pynvml.NVML_TEMPERATURE_GPU) > 0
    assert nvml.reset() == 1
    assert nvml.nvmlDeviceGetTemperature(handles[3], pynvml.NVML_TEMPERATURE_GPU) > 0


def test_ecc_dbe_then_reset_keeps_aggregate_counts(nvml: SimulatedNvml) -> None:
    h = nvml.nvmlDeviceGetHandleByIndex(3)
    unc = pynvml.NVML_MEMORY_ERROR_TYPE_UNCORRECTED
    nvml.inject(fault("ecc-dbe"))
    assert nvml.nvmlDeviceGetTotalEccErrors(h, unc, pynvml.NVML_VOLATILE_ECC) == 2
    assert nvml.nvmlDeviceGetTotalEccErrors(h, unc, pynvml.NVML_AGGREGATE_ECC) == 2
    assert nvml.nvmlDeviceGetRemappedRows(h)[2] == 1  # pending
    [recovery] = nvml.nvmlDeviceGetFieldValues(h, [pynvml.NVML_FI_DEV_GET_GPU_RECOVERY_ACTION])
    assert (recovery.nvmlReturn, recovery.value.uiVal) == (0, 1)
    nvml.reset(3)
    assert nvml.nvmlDeviceGetTotalEccErrors(h, unc, pynvml.NVML_VOLATILE_ECC) == 0
    assert nvml.nvmlDeviceGetTotalEccErrors(h, unc, pynvml.NVML_AGGREGATE_ECC) == 2
    assert nvml.nvmlDeviceGetRemappedRows(h)[2] == 0


def test_overheat_throttles(nvml: SimulatedNvml, busy_clock: FakeClock) -> None:
    h = nvml.nvmlDeviceGetHandleByIndex(3)
    normal_sm = nvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_SM)
    nvml.inject(fault("overheat"))
    thermal = nvml.nvmlDeviceGetViolationStatus(h, pynvml.NVML_PERF_POLICY_THERMAL).violationTime
    busy_clock.t += 5
    assert nvml.nvmlDeviceGetTemperature(h, pynvml.NVML_TEMPERATURE_GPU) >= 93
    reasons = nvml.nvmlDeviceGetCurrentClocksEventReasons(h)
    assert reasons & pynvml.nvmlClocksEventReasonHwThermalSlowdown
    assert reasons & pynvml.nvmlClocksEventReasonSwThermalSlowdown
    assert nvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_SM) < normal_sm
    later = nvml.nvmlDeviceGetViolationStatus(h, pynvml.NVML_PERF_POLICY_THERMAL).violationTime
    assert later - thermal == pytest.approx(5e9)


def test_load_anomaly_pins_load_and_temperature_follows(nvml: SimulatedNvml) -> None:
    h = nvml.nvmlDeviceGetHandleByIndex(3)
    busy = nvml.nvmlDeviceGetTemperature(h, pynvml.NVML_TEMPERATURE_GPU)
    nvml.inject(fault("load-anomaly"))
    assert nvml.nvmlDeviceGetUtilizationRates(h).gpu == 2
    assert nvml.nvmlDeviceGetTemperature(h, pynvml.NVML_TEMPERATURE_GPU) < busy


def test_nvlink_errors_grow_on_some_links(nvml: SimulatedNvml, busy_clock: FakeClock) -> None:
    h = nvml.nvmlDeviceGetHandleByIndex(3)
    nvml.inject(fault("nvlink-errors"))
    busy_clock.t += 2
    counts = [nvml.nvmlDeviceGetNvLinkErrorCounter(h, link, pynvml.NVML_NVLINK_ERROR_DL_CRC_FLIT) for link in range(18)]
    assert sum(1 for c in counts if c > 0) == 3 and max(counts) == 40


@pytest.mark.parametrize("body, reason", [
    ({"fault": "nope", "node": "node-1"}, "unknown fault"),
    ({"fault": "xid79", "node": "node-9"}, "unknown node"),
    ({"fault": "xid79", "node": "node-1", "gpu": 8}, "gpu must be"),
    ({"fault": "xid79", "node": "node-1", "gpu": "3"}, "gpu must be"),
    ({"fault": "xid-burst", "node": "node-1", "count": -1}, "count must be"),
    (["xid79"], "JSON object"),
])
def test_parse_fault_rejects_bad_requests(body: object, reason: str) -> None:
    with pytest.raises(FaultError, match=reason):
        parse_fault(body, {"node-1": 8})


def test_parse_fault_defaults() -> None:
    parsed = parse_fault({"fault": "node-down", "node": "node-1", "gpu": 5}, {"node-1": 8}, now=1.0)
    assert (parsed.gpu, parsed.since) == (None, 1.0)
    assert parse_fault({"fault": "ecc-dbe", "node": "node-1"}, {"node-1": 8}).gpu == 0
