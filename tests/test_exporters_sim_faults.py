"""Every simulated fault shows up in the exported metrics the way the alert rules look for it."""

from __future__ import annotations

import pytest
from prometheus_client.parser import text_string_to_metric_families

from sim_clock import FakeClock
from vigil.exporters.nvml_collector import NvmlCollector
from vigil.exporters.sim.faults import DISK_FAULTS, FAULTS, JOB_FAULTS, NODE_FAULTS, Fault
from vigil.exporters.sim.nvml import SimulatedNvml

NODE, GPU = "node-1", 2
T0 = 1_763_726_400.0  # a Friday noon: the GPUs are busy


def samples(collector: NvmlCollector, name: str, **labels: str) -> list[float]:
    text = collector.exposition().decode()
    return [s.value for f in text_string_to_metric_families(text) for s in f.samples
            if s.name == name and s.labels.get("gpu") == str(GPU) and all(s.labels.get(k) == v for k, v in labels.items())]


def one(collector: NvmlCollector, name: str, **labels: str) -> float:
    [value] = samples(collector, name, **labels)
    return value


# fault -> (params, check(before, after) on the exported metrics of the faulty GPU)
EXPECTED = {
    "xid79": ({}, lambda c: one(c, "vigil_gpu_up") == 0),
    "ecc-dbe": ({}, lambda c: one(c, "vigil_gpu_ecc_errors_total", error_type="uncorrected", counter_type="volatile") == 2
                and one(c, "vigil_gpu_recovery_action") == 1 and one(c, "vigil_gpu_remap_pending") == 1),
    "overheat": ({}, lambda c: one(c, "vigil_gpu_temperature_celsius", sensor="gpu") >= 90
                 and one(c, "vigil_gpu_clock_event_active", reason="hw_thermal") == 1
                 and one(c, "vigil_gpu_clock_event_seconds_total", reason="thermal") == 10),
    "ecc-storm": ({}, lambda c: one(c, "vigil_gpu_ecc_errors_total", error_type="corrected", counter_type="volatile") == 500),
    "row-remap-failure": ({}, lambda c: one(c, "vigil_gpu_remap_failure") == 1 and one(c, "vigil_gpu_recovery_action") == 2),
    "xid-burst": ({"count": 4, "xid": 43}, lambda c: one(c, "vigil_gpu_up") == 1),
    "thermal-throttle": ({}, lambda c: one(c, "vigil_gpu_clock_event_active", reason="sw_thermal") == 1
                         and one(c, "vigil_gpu_clock_hertz", clock="sm") == 1410e6),
    "nvlink-errors": ({}, lambda c: sum(samples(c, "vigil_gpu_nvlink_errors_total", error_type="crc_flit")) == 3 * 200),
    "load-anomaly": ({}, lambda c: one(c, "vigil_gpu_utilization_ratio") == 0.02
                     and one(c, "vigil_gpu_power_watts") < 120),
    "nvml-hang": ({"seconds": 0}, lambda c: one(c, "vigil_gpu_up") == 1),
}
XIDS = {"xid79": {"79"}, "ecc-dbe": {"48"}, "ecc-storm": {"92", "94"}, "row-remap-failure": {"64"},
        "xid-burst": {"43"}, "nvlink-errors": {"74"}}


def test_every_gpu_fault_has_an_expectation() -> None:
    # disk faults: tests/test_sim_disk_faults.py; job faults: tests/test_sim_jobs.py
    assert set(EXPECTED) == set(FAULTS) - NODE_FAULTS - DISK_FAULTS - JOB_FAULTS


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_fault_is_visible_in_metrics_and_a_reset_clears_it(name: str) -> None:
    clock = FakeClock(T0)
    sim = SimulatedNvml(NODE, 4, clock=clock)
    collector = NvmlCollector(sim, NODE, watch_xids=False, clock=clock)
    collector.refresh()
    healthy = collector.exposition()
    params, check = EXPECTED[name]
    # XIDs are delivered through an event set as the watcher registers it
    event_set = sim.nvmlEventSetCreate()
    for handle in collector.handles().values():
        sim.nvmlDeviceRegisterEvents(handle, 0x8, event_set)
    sim.inject(Fault(name, NODE, GPU, clock.t, params))
    clock.t += 10
    collector.refresh()
    assert check(collector), name
    xids = []
    while True:
        try:
            xids.append(str(sim.nvmlEventSetWait(event_set, 0).eventData))
        except sim.NVMLError_Timeout:
            break
    assert set(xids) == XIDS.get(name, set())
    if name == "xid-burst":
        assert len(xids) == 4
    assert sim.reset(GPU) == 1
    clock.t += 10
    collector.refresh()
    assert one(collector, "vigil_gpu_up") == 1
    assert one(collector, "vigil_gpu_ecc_errors_total", error_type="uncorrected", counter_type="volatile") == 0
    assert one(collector, "vigil_gpu_remap_failure") == 0 and one(collector, "vigil_gpu_recovery_action") == 0
    assert healthy != collector.exposition()  # time moved on; the GPU is read again
