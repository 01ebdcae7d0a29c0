"""The NVML collector, driven through the simulated NVML the way Prometheus sees it (exposition text)."""

from __future__ import annotations

import shutil
import subprocess
import threading
import time

import pytest
from prometheus_client import CollectorRegistry, generate_latest
from bench_support import load_bench
from exporters_nvml_support import wait_until
from prometheus_client.parser import text_string_to_metric_families

from vigil.exporters.gpu_specs import SPECS
from vigil.exporters.nvml_collector import NvmlCollector
from vigil.exporters.sim.faults import Fault
from vigil.exporters.sim.identity import device_uuid
from vigil.exporters.sim.nvml import SimulatedNvml

NODE = "node-1"
TimedNvml = load_bench("exporters/timed_nvml.py").TimedNvml  # counts the calls of each NVML function
# present only when the situation arises (MIG enabled, an NVML error happened)
CONDITIONAL = {"vigil_gpu_mig_instance_memory_used_bytes", "vigil_exporter_nvml_errors_total"}


def scrape(registry: CollectorRegistry) -> dict[str, list]:
    """name -> samples, parsed from the exposition text Prometheus would read."""
    samples: dict[str, list] = {}
    for family in text_string_to_metric_families(generate_latest(registry).decode()):
        for sample in family.samples:
            samples.setdefault(sample.name, []).append(sample)
    return samples


def value(samples: dict[str, list], metric: str, **labels: str) -> float:
    [match] = [s.value for s in samples[metric] if all(s.labels.get(k) == v for k, v in labels.items())]
    return match


def offline(sim: SimulatedNvml, **kwargs) -> tuple[NvmlCollector, CollectorRegistry]:
    """A collector without background threads (tests call refresh()) in a fresh registry."""
    collector = NvmlCollector(sim, NODE, watch_xids=False, **kwargs)
    registry = CollectorRegistry()
    registry.register(collector)
    return collector, registry


@pytest.fixture()
def sim() -> SimulatedNvml:
    return SimulatedNvml(NODE, 8)


@pytest.fixture()
def exporter(sim: SimulatedNvml):
    """A started collector (fast loop, XID watcher on) registered in a fresh registry."""
    collector = NvmlCollector(sim, NODE, interval=0.05)
    registry = CollectorRegistry()
    registry.register(collector)
    collector.start()
    yield collector, registry
    collector.stop()


def test_every_metric_is_exported_with_its_labels(sim: SimulatedNvml) -> None:
    collector, registry = offline(sim)
    collector.refresh()
    collector.refresh()  # GPM's profiling metrics come from the second cycle on (two samples)
    collector.record_xid(2, 48, 1_700_000_000.0)
    samples = scrape(registry)
    for spec in SPECS:
        if spec.name in CONDITIONAL:
            continue
        assert spec.name in samples, spec.name
        for sample in samples[spec.name]:
            assert set(sample.labels) == set(spec.labels), spec.name
    assert len(samples["vigil_gpu_up"]) == 8
    assert value(samples, "vigil_gpu_memory_total_bytes", gpu="0") > 79 * 1024**3
    assert value(samples, "vigil_gpu_power_limit_watts", gpu="0") == 700.0
    assert 0 <= value(samples, "vigil_gpu_utilization_ratio", gpu="5") <= 1
    assert {s.labels["sensor"] for s in samples["vigil_gpu_temperature_celsius"]} == {"gpu", "memory"}
    assert value(samples, "vigil_gpu_xid_errors_total", gpu="2", xid="48") == 1
    info = value(samples, "vigil_gpu_info", gpu="4", uuid=device_uuid(NODE, 4), name="NVIDIA H100 80GB HBM3",
                 driver="550.90.07", cuda="12.4")
    assert info == 1


def test_each_xid_series_has_its_own_last_event_time_and_the_gpu_the_latest(sim: SimulatedNvml) -> None:
    """The rules tell an XID's new event from its counter back after a failed scrape by the XID's own
    time (rules/kinds_xid.py): a new XID 74 must not refresh XID 62's."""
    collector, registry = offline(sim)
    collector.refresh()
    collector.record_xid(2, 62, 1_700_000_000.0)
    collector.record_xid(2, 74, 1_700_000_900.0)
    collector.record_xid(3, 62, 1_700_000_500.0)
    samples = scrape(registry)
    last = "vigil_gpu_xid_last_seen_timestamp_seconds"
    assert value(samples, last, gpu="2", xid="62", **{"class": "critical"}) == 1_700_000_000.0
    assert value(samples, last, gpu="2", xid="74") == 1_700_000_900.0
    assert value(samples, last, gpu="3", xid="62") == 1_700_000_500.0
    assert len(samples[last]) == len(samples["vigil_gpu_xid_errors_total"]) == 3
    assert value(samples, "vigil_gpu_last_xid_timestamp_seconds", gpu="2") == 1_700_000_900.0
    assert value(samples, "vigil_gpu_last_xid_timestamp_seconds", gpu="3") == 1_700_000_500.0


@pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool not installed")
def test_promtool_check_metrics_is_clean(sim: SimulatedNvml) -> None:
    collector, registry = offline(sim)
    sim.inject(Fault("xid79", NODE, 6, 0.0))
    collector.refresh()
    collector.record_xid(6, 79, 1_700_000_000.0)
    result = subprocess.run(["promtool", "check", "metrics"], input=collector.exposition(),
                            capture_output=True, timeout=30)
    assert result.returncode == 0 and result.stdout + result.stderr == b"", result.stdout + result.stderr


def test_lost_gpu_stays_exported_as_down_while_others_keep_values(sim: SimulatedNvml) -> None:
    collector, registry = offline(sim)
    collector.refresh()
    sim.inject(Fault("xid79", NODE, 3, 0.0))
    collector.refresh()
    samples = scrape(registry)
    assert value(samples, "vigil_gpu_up", gpu="3", uuid=device_uuid(NODE, 3)) == 0
    assert all(value(samples, "vigil_gpu_up", gpu=str(g)) == 1 for g in range(8) if g != 3)
    assert {s.labels["gpu"] for s in samples["vigil_gpu_temperature_celsius"]} == {str(g) for g in range(8) if g != 3}
    assert value(samples, "vigil_node_gpus_visible") == 7
    assert value(samples, "vigil_node_gpus_expected") == 8
    assert value(samples, "vigil_exporter_nvml_errors_total", code="gpu_is_lost") >= 1
    sim.reset()
    collector.refresh()
    assert value(scrape(registry), "vigil_gpu_up", gpu="3") == 1


def test_lost_from_the_start_keeps_its_index_and_expected_count(sim: SimulatedNvml) -> None:
    sim.inject(Fault("xid79", NODE, 0, 0.0))
    collector, registry = offline(sim, expected_gpus=8)
    collector.refresh()
    samples = scrape(registry)
    assert value(samples, "vigil_gpu_up", gpu="0") == 0
    assert value(samples, "vigil_node_gpus_visible") == 7


def test_unsupported_field_is_skipped_not_a_down_gpu() -> None:
    sim = SimulatedNvml(NODE, 2, unsupported=frozenset({"nvmlDeviceGetFanSpeed"}))
    collector, registry = offline(sim)
    collector.refresh()
    samples = scrape(registry)
    assert "vigil_gpu_fan_speed_ratio" not in samples
    assert value(samples, "vigil_gpu_up", gpu="1") == 1
    assert value(samples, "vigil_exporter_nvml_errors_total", code="not_supported") == 2


def test_a_refused_function_is_asked_once_per_gpu_and_counted_once() -> None:
    counting = TimedNvml(SimulatedNvml(NODE, 2, unsupported=frozenset({"nvmlDeviceGetFanSpeed"})))
    collector, registry = offline(counting)
    for _ in range(3):
        collector.refresh()
    samples = scrape(registry)
    assert counting.per_function["nvmlDeviceGetFanSpeed"][0] == 2  # one per GPU, not one per GPU and cycle
    assert counting.per_function["nvmlDeviceGetPowerUsage"][0] == 6  # supported calls are made every cycle
    assert value(samples, "vigil_exporter_nvml_errors_total", code="not_supported") == 2
    assert value(samples, "vigil_gpu_power_watts", gpu="1") > 0


def test_a_refused_function_is_asked_again_after_a_lost_gpu_comes_back() -> None:
    sim = SimulatedNvml(NODE, 2, unsupported=frozenset({"nvmlDeviceGetFanSpeed"}))
    counting = TimedNvml(sim)
    collector, registry = offline(counting)
    collector.refresh()
    sim.inject(Fault("xid79", NODE, 0, 0.0))
    collector.refresh()
    assert value(scrape(registry), "vigil_gpu_up", gpu="0") == 0
    sim.reset(0)
    collector.refresh()
    assert value(scrape(registry), "vigil_gpu_up", gpu="0") == 1
    assert counting.per_function["nvmlDeviceGetFanSpeed"][0] > 2


def test_ecc_dbe_shows_and_volatile_count_drops_after_reset(sim: SimulatedNvml) -> None:
    collector, registry = offline(sim)
    sim.inject(Fault("ecc-dbe", NODE, 5, 0.0))
    collector.refresh()
    samples = scrape(registry)
    labels = {"gpu": "5", "error_type": "uncorrected"}
    assert value(samples, "vigil_gpu_ecc_errors_total", counter_type="volatile", **labels) == 2
    assert value(samples, "vigil_gpu_remap_pending", gpu="5") == 1
    assert value(samples, "vigil_gpu_recovery_action", gpu="5") == 1
    sim.reset(5)
    collector.refresh()
    samples = scrape(registry)
    assert value(samples, "vigil_gpu_ecc_errors_total", counter_type="volatile", **labels) == 0
    assert value(samples, "vigil_gpu_ecc_errors_total", counter_type="aggregate", **labels) == 2
    assert value(samples, "vigil_gpu_recovery_action", gpu="5") == 0


def test_xid_burst_counts_every_event_with_its_class(sim: SimulatedNvml, exporter) -> None:
    collector, registry = exporter
    # start() registers every GPU before it returns: an XID injected at once is not lost
    assert collector._xids.registrations == 1 and len(collector.handles()) == 8
    sim.inject(Fault("xid-burst", NODE, 2, 0.0, {"count": 13, "xid": 13}))
    sim.inject(Fault("xid-burst", NODE, 4, 0.0, {"count": 3, "xid": 999}))

    def counts() -> dict:
        return {(s.labels["gpu"], s.labels["xid"], s.labels["class"]): s.value
                for s in scrape(registry).get("vigil_gpu_xid_errors_total", [])}

    wait_until(lambda: sum(counts().values()) == 16)
    assert counts() == {("2", "13", "application"): 13, ("4", "999", "unknown"): 3}
    sim.inject(Fault("xid79", NODE, 7, 0.0))
    wait_until(lambda: counts().get(("7", "79", "critical")) == 1)


def test_an_xid_right_after_start_is_not_lost(sim: SimulatedNvml, monkeypatch) -> None:
    """NVML hands an XID only to event sets registered before it happened, so start() must register the
    GPUs itself: here the watcher's thread is held back until the XID is injected."""
    injected = threading.Event()
    thread_start = threading.Thread.start

    def held_back_start(thread: threading.Thread) -> None:
        if thread.name == "vigil-xid-watcher":
            run = thread.run
            thread.run = lambda: (injected.wait(5), run())  # type: ignore[method-assign]
        thread_start(thread)

    monkeypatch.setattr(threading.Thread, "start", held_back_start)
    collector = NvmlCollector(sim, NODE, interval=60)
    registry = CollectorRegistry()
    registry.register(collector)
    collector.start()
    try:
        sim.inject(Fault("xid79", NODE, 5, 0.0))
        injected.set()
        wait_until(lambda: "vigil_gpu_xid_errors_total" in scrape(registry))
        assert value(scrape(registry), "vigil_gpu_xid_errors_total", gpu="5", xid="79") == 1
    finally:
        collector.stop()


def test_hung_nvml_call_does_not_delay_scrapes(sim: SimulatedNvml, exporter) -> None:
    collector, registry = exporter
    before = value(scrape(registry), "vigil_exporter_last_collection_timestamp_seconds")
    sim.inject(Fault("nvml-hang", NODE, 1, 0.0, {"seconds": 3}))
    time.sleep(0.3)  # the loop is now stuck inside an NVML call
    durations = []
    for _ in range(5):
        started = time.perf_counter()
        samples = scrape(registry)
        durations.append(time.perf_counter() - started)
    assert min(durations) < 0.25  # served from the snapshot; generous for a loaded 2-core CI box
    assert value(samples, "vigil_gpu_up", gpu="0") == 1
    stale = value(samples, "vigil_exporter_last_collection_timestamp_seconds")
    assert stale >= before and time.time() - stale >= 0.2


def test_without_field_batching_the_dedicated_calls_fill_in() -> None:
    sim = SimulatedNvml(NODE, 2, unsupported=frozenset({"nvmlDeviceGetFieldValues"}))
    collector, registry = offline(sim)
    sim.inject(Fault("ecc-dbe", NODE, 1, 0.0))
    collector.refresh()
    samples = scrape(registry)
    assert value(samples, "vigil_gpu_ecc_errors_total", gpu="1", error_type="uncorrected", counter_type="volatile") == 2
    assert value(samples, "vigil_gpu_remap_pending", gpu="1") == 1
    assert value(samples, "vigil_gpu_energy_joules_total", gpu="0") >= 0
    assert {s.labels["error_type"] for s in samples["vigil_gpu_nvlink_errors_total"]} == {
        "replay", "recovery", "crc_flit", "crc_data"}
    assert "vigil_gpu_recovery_action" not in samples  # only NVML's field 230 knows it


def test_served_text_matches_prometheus_client_rendering(sim: SimulatedNvml) -> None:
    collector, registry = offline(sim)
    sim.inject(Fault("ecc-storm", NODE, 2, 0.0))
    collector.refresh()
    collector.record_xid(2, 92, 1_700_000_000.5)

    def parsed(text: str) -> set:
        return {(s.name, tuple(sorted(s.labels.items())), s.value)
                for family in text_string_to_metric_families(text) for s in family.samples}

    served = collector.exposition().decode()
    assert parsed(served) == parsed(generate_latest(registry).decode())
    assert collector.exposition() is collector.exposition()  # cached until the next cycle or XID
    collector.record_xid(2, 92, 1_700_000_001.5)
    assert value({"x": [s for f in text_string_to_metric_families(collector.exposition().decode())
                        for s in f.samples if s.name == "vigil_gpu_xid_errors_total"]}, "x", gpu="2") == 2


def test_driver_reload_marks_gpus_down_then_xids_flow_again(sim: SimulatedNvml, exporter) -> None:
    collector, registry = exporter
    wait_until(lambda: collector._xids.registrations == 1)
    sim.unload_driver()  # the driver goes away under the exporter (e.g. an upgrade reloads it)
    wait_until(lambda: b'code="driver_not_loaded"' in collector.exposition())  # nvmlInit fails now
    samples = scrape(registry)
    assert [s.value for s in samples["vigil_gpu_up"]] == [0] * 8
    assert value(samples, "vigil_node_gpus_visible") == 0
    sim.load_driver()
    # the collector re-initialises NVML on its next cycle; the XID watcher registers a new event set
    wait_until(lambda: value(scrape(registry), "vigil_node_gpus_visible") == 8)
    wait_until(lambda: collector._xids.registrations >= 2, timeout=10)
    time.sleep(0.1)
    sim.inject(Fault("xid-burst", NODE, 6, 0.0, {"count": 2, "xid": 31}))
    wait_until(lambda: "vigil_gpu_xid_errors_total" in scrape(registry))
    assert value(scrape(registry), "vigil_gpu_xid_errors_total", gpu="6", xid="31") == 2


def test_a_stuck_gpu_is_isolated_from_the_others(sim: SimulatedNvml) -> None:
    collector, registry = offline(sim, gpu_timeout=0.2)
    collector.refresh()
    sim.inject(Fault("nvml-hang", NODE, 1, 0.0, {"seconds": 1}))
    started = time.monotonic()
    collector.refresh()
    assert time.monotonic() - started < 0.9  # gave up on GPU 1 after 0.2 s, read the other seven
    samples = scrape(registry)
    assert value(samples, "vigil_gpu_up", gpu="1") == 0
    assert value(samples, "vigil_gpu_collection_stalled", gpu="1") == 1
    assert all(value(samples, "vigil_gpu_up", gpu=str(g)) == 1 for g in range(8) if g != 1)
    assert {s.labels["gpu"] for s in samples["vigil_gpu_power_watts"]} == {str(g) for g in range(8) if g != 1}
    collector.refresh()  # still stuck: not read again, no second thread blocked
    assert value(scrape(registry), "vigil_gpu_collection_stalled", gpu="1") == 1
    sim.reset(1)
    time.sleep(1.0)  # the stuck call returns
    collector.refresh()
    samples = scrape(registry)
    assert value(samples, "vigil_gpu_up", gpu="1") == 1 and value(samples, "vigil_gpu_collection_stalled", gpu="1") == 0
    collector.stop()


def test_mig_instances_are_exported_per_instance() -> None:
    # a fixed clock: the simulated load moves with time, and the test reads NVML again after the scrape
    sim = SimulatedNvml(NODE, 2, mig_gpus={1: 3}, clock=lambda: 1_790_000_000.0)
    collector, registry = offline(sim)
    collector.refresh()
    samples = scrape(registry)
    assert value(samples, "vigil_gpu_mig_mode", gpu="0") == 0
    assert value(samples, "vigil_gpu_mig_mode", gpu="1") == 1
    instances = [s for s in samples["vigil_gpu_mig_instance_memory_used_bytes"] if s.labels["gpu"] == "1"]
    assert len(instances) == 3 and all(s.labels["mig_uuid"].startswith("MIG-") for s in instances)
    assert len({s.labels["mig_uuid"] for s in instances}) == 3
    assert value(samples, "vigil_gpu_up", gpu="1") == 1
    # in MIG mode NVML has no whole-GPU utilization: the field is skipped, the GPU is not down
    assert {s.labels["gpu"] for s in samples["vigil_gpu_utilization_ratio"]} == {"0"}
    # the job's process is listed once per instance by NVML, exported once with its memory summed
    listed = sim.nvmlDeviceGetComputeRunningProcesses(sim.nvmlDeviceGetHandleByIndex(1))
    [process] = [s for s in samples["vigil_gpu_process_memory_bytes"] if s.labels["gpu"] == "1"]
    assert len(listed) == 3 and process.value == sum(p.usedGpuMemory for p in listed)


def test_a_gpu_missing_after_driver_reload_stays_exported_as_down(sim: SimulatedNvml) -> None:
    collector, registry = offline(sim)
    collector.refresh()
    sim.unload_driver()
    collector.refresh()
    sim.gpu_count = 7  # the reloaded driver enumerates one GPU less (it did not come back from the bus)
    sim.load_driver()
    collector.refresh()
    samples = scrape(registry)
    assert value(samples, "vigil_gpu_up", gpu="7", uuid=device_uuid(NODE, 7)) == 0
    assert value(samples, "vigil_node_gpus_visible") == 7 and value(samples, "vigil_node_gpus_expected") == 8
    assert all(value(samples, "vigil_gpu_up", gpu=str(g)) == 1 for g in range(7))


def test_real_pynvml_without_a_driver_reports_the_reason_not_a_crash() -> None:
    import pynvml

    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError:
        pass
    else:
        pynvml.nvmlShutdown()
        pytest.skip("this machine has an NVIDIA driver")
    collector = NvmlCollector(pynvml, "no-gpu-host", watch_xids=False)
    registry = CollectorRegistry()
    registry.register(collector)
    collector.refresh()
    samples = scrape(registry)
    assert value(samples, "vigil_node_gpus_visible") == 0
    [error] = samples["vigil_exporter_nvml_errors_total"]
    assert error.labels["code"] in {"library_not_found", "driver_not_loaded"} and error.value == 1


def test_gpu_processes_feed_job_attribution(sim: SimulatedNvml, tmp_path) -> None:
    from vigil.exporters.job_sources.slurm import SlurmSource
    from vigil.exporters.jobs import JobAttributionCollector

    collector, _registry = offline(sim)
    collector.refresh()
    processes = collector.processes()
    assert [(p.node, p.gpu, p.uuid) for p in processes] == [(NODE, g, device_uuid(NODE, g)) for g in range(8)]
    assert all(p.used_memory_bytes and p.used_memory_bytes > 0 for p in processes)
    # the simulated training processes of GPUs 0-3 belong to Slurm job 77 (a fake /proc, as on a node)
    for p in processes[:4]:
        (tmp_path / str(p.pid)).mkdir(exist_ok=True)
        (tmp_path / str(p.pid) / "environ").write_bytes(b"SLURM_JOB_ID=77\0SLURM_JOB_USER=alice\0")
    jobs = CollectorRegistry()
    attribution = JobAttributionCollector(collector.processes, [SlurmSource(tmp_path, tmp_path / "cgroup")], NODE,
                                          unreadable=collector.unreadable_gpus)
    jobs.register(attribution)
    samples = scrape(jobs)
    assert {s.labels["gpu"] for s in samples["vigil_gpu_job"] if s.labels["job_id"] == "77"} == {"0", "1", "2", "3"}
    sim.inject(Fault("xid79", NODE, 0, 0.0))
    collector.refresh()
    assert [p.gpu for p in collector.processes()] == list(range(1, 8))  # a lost GPU lists no processes
    assert collector.unreadable_gpus() == [0]
    attribution.refresh()  # ... but job 77 still holds it (its last known uuid), for the job's life
    held = [s.labels for s in scrape(jobs)["vigil_gpu_job"] if s.labels["job_id"] == "77"]
    assert {s["gpu"] for s in held} == {"0", "1", "2", "3"}
    assert {"node": NODE, "gpu": "0", "uuid": device_uuid(NODE, 0), "job_id": "77"} in held
