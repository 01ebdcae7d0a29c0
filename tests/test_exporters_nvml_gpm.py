"""The DCGM-style profiling metrics of the NVML backend, from GPM (exporters/gpm.py), against the
simulated H100's GPM (exporters/sim/nvml_gpm.py), on a fake clock."""

from __future__ import annotations

from dataclasses import replace

import pytest
from bench_support import load_bench
from prometheus_client.parser import text_string_to_metric_families
from sim_clock import FakeClock

from vigil.exporters import dcgm, gpu_specs
from vigil.exporters.nvml_collector import NvmlCollector
from vigil.exporters.sim.faults import Fault
from vigil.exporters.sim.jobs import JobSchedule
from vigil.exporters.sim.nvml import SimulatedNvml

NODE = "node-1"
INTERVAL = 5.0
PROFILING = [spec.name for spec in gpu_specs.PROFILING]
TimedNvml = load_bench("exporters/timed_nvml.py").TimedNvml  # counts the calls of each NVML function


def collector_of(nvml, clock: FakeClock) -> NvmlCollector:
    return NvmlCollector(nvml, NODE, watch_xids=False, clock=clock)


def cycle(collector: NvmlCollector, clock: FakeClock) -> dict[str, dict[str, float]]:
    """One collection cycle `INTERVAL` after the last; {metric: {gpu: value}} of the page it serves."""
    clock.advance(INTERVAL)
    collector.refresh()
    page: dict[str, dict[str, float]] = {}
    for family in text_string_to_metric_families(collector.exposition().decode()):
        for sample in family.samples:
            page.setdefault(sample.name, {})[sample.labels.get("gpu", sample.labels.get("code", ""))] = sample.value
    return page


def profiled_gpus(page: dict[str, dict[str, float]]) -> dict[str, set[str]]:
    return {name: set(page.get(name, {})) for name in PROFILING}


def test_the_four_ratios_come_on_the_second_cycle_within_0_and_1(fake_clock: FakeClock) -> None:
    sim = SimulatedNvml(NODE, 4, clock=fake_clock)
    collector = collector_of(sim, fake_clock)
    first = cycle(collector, fake_clock)
    assert not set(PROFILING) & set(first)  # GPM needs two samples
    second = cycle(collector, fake_clock)
    assert profiled_gpus(second) == {name: {"0", "1", "2", "3"} for name in PROFILING}
    for name in PROFILING:
        assert all(0.0 <= v <= 1.0 for v in second[name].values()), name
    for gpu, util in second["vigil_gpu_utilization_ratio"].items():  # a plain node: every GPU computes
        assert 0 < second["vigil_gpu_sm_occupancy_ratio"][gpu] < second["vigil_gpu_sm_active_ratio"][gpu] <= util
        assert 0 < second["vigil_gpu_dram_active_ratio"][gpu] < second["vigil_gpu_tensor_pipe_active_ratio"][gpu]
    assert "vigil_exporter_nvml_errors_total" not in second
    # one sample held per GPU between cycles; the dropped ones were freed, and stop() frees the rest
    cycle(collector, fake_clock)
    assert sim.gpm_samples_allocated() == 4
    collector.stop()
    assert sim.gpm_samples_allocated() == 0


def test_the_series_carry_the_labels_and_help_of_the_dcgm_backend(fake_clock: FakeClock) -> None:
    collector = collector_of(SimulatedNvml(NODE, 2, clock=fake_clock), fake_clock)
    for _ in range(2):
        fake_clock.advance(INTERVAL)
        collector.refresh()
    families = {f.name: f for f in text_string_to_metric_families(collector.exposition().decode())}
    dcgm_specs = {spec.name: spec for spec in dcgm.SPECS}
    for spec in gpu_specs.PROFILING:
        assert replace(dcgm_specs[spec.name], source=spec.source) == spec  # one definition, two sources
        family = families[spec.name]
        assert family.type == "gauge" and family.documentation == spec.help
        assert all(set(s.labels) == set(spec.labels) for s in family.samples)


def first_moment(schedule: JobSchedule, gpu: int, activity: str, start: float) -> float:
    """The first minute from `start` at which `gpu` of NODE does `activity` for two cycles running."""
    for minute in range(7 * 24 * 60):
        t = start + 60 * minute
        held = [schedule.gpu(NODE, gpu, when) for when in (t, t + INTERVAL, t + 2 * INTERVAL)]
        if all(h is not None and h.activity == activity for h in held):
            return t
    raise AssertionError(f"GPU {gpu} is never {activity} for two cycles in a simulated week")


@pytest.mark.parametrize("activity", ["running", "idle", "hung"])
def test_sm_activity_follows_the_gpus_job(fake_clock: FakeClock, activity: str) -> None:
    """One job slot holds GPUs 0-3 of the node (a quarter of them idle in some jobs); GPUs 4-7 stay free."""
    sim = SimulatedNvml(NODE, 8, clock=fake_clock)
    sim.jobs = JobSchedule([NODE], 8, jobs=1)
    gpu = 3 if activity == "idle" else 0
    fake_clock.t = first_moment(sim.jobs, gpu, "idle" if activity == "idle" else "running", fake_clock.t) - INTERVAL
    if activity == "hung":
        sim.jobs.hang(Fault("job-hang", NODE, gpu, fake_clock.t + INTERVAL))
    collector = collector_of(sim, fake_clock)
    cycle(collector, fake_clock)
    page = cycle(collector, fake_clock)
    for free in range(4, 8):
        assert page["vigil_gpu_sm_active_ratio"][str(free)] == 0.0
        assert page["vigil_gpu_tensor_pipe_active_ratio"][str(free)] == 0.0
    sm_active = page["vigil_gpu_sm_active_ratio"][str(gpu)]
    if activity == "running":
        assert 0.05 < sm_active <= page["vigil_gpu_utilization_ratio"][str(gpu)]
        assert page["vigil_gpu_tensor_pipe_active_ratio"][str(gpu)] > 0
    else:
        assert sm_active == 0.0 and page["vigil_gpu_dram_active_ratio"][str(gpu)] == 0.0


def test_a_gpu_without_gpm_has_no_such_series_and_keeps_the_rest(fake_clock: FakeClock) -> None:
    counting = TimedNvml(SimulatedNvml(NODE, 2, clock=fake_clock, gpm_unsupported=frozenset({1})))
    plain = collector_of(SimulatedNvml(NODE, 2, clock=FakeClock(fake_clock.t)), FakeClock(fake_clock.t))
    collector = collector_of(counting, fake_clock)
    for _ in range(3):
        page = cycle(collector, fake_clock)
        reference = cycle(plain, plain.clock)
    assert profiled_gpus(page) == {name: {"0"} for name in PROFILING}
    assert {name for name, gpus in page.items() if "1" in gpus} == {
        name for name, gpus in reference.items() if "1" in gpus} - set(PROFILING)
    assert "vigil_exporter_nvml_errors_total" not in page  # "not supported" is an answer, not an error
    assert counting.per_function["nvmlGpmQueryDeviceSupport"][0] == 2  # asked once per GPU, not every cycle
    assert counting.per_function["nvmlGpmSampleGet"][0] == 3  # GPU 0 only


@pytest.mark.parametrize("refused", ["nvmlGpmQueryDeviceSupport", "nvmlGpmSampleAlloc", "nvmlGpmSampleGet",
                                     "nvmlGpmMetricsGet"])
def test_a_driver_that_refuses_gpm_is_asked_once_and_counted_once(fake_clock: FakeClock, refused: str) -> None:
    sim = SimulatedNvml(NODE, 2, clock=fake_clock, unsupported=frozenset({refused}))
    collector = collector_of(sim, fake_clock)
    for _ in range(4):
        page = cycle(collector, fake_clock)
    assert not set(PROFILING) & set(page)
    assert page["vigil_exporter_nvml_errors_total"] == {"not_supported": 2.0}  # once per GPU
    assert set(page["vigil_gpu_power_watts"]) == {"0", "1"}
    assert sim.gpm_samples_allocated() == 0  # nothing held for a GPU without GPM


def test_gpm_kept_to_admin_users_is_asked_once_per_gpu(fake_clock: FakeClock) -> None:
    import pynvml

    class Restricted(TimedNvml):  # NVreg_RestrictProfilingToAdminUsers, an exporter that is not root
        def nvmlGpmSampleGet(self, handle, sample):
            raise pynvml.NVMLError(pynvml.NVML_ERROR_NO_PERMISSION)

    sim = SimulatedNvml(NODE, 2, clock=fake_clock)
    collector = collector_of(Restricted(sim), fake_clock)
    for _ in range(4):
        page = cycle(collector, fake_clock)
    assert not set(PROFILING) & set(page) and set(page["vigil_gpu_power_watts"]) == {"0", "1"}
    assert page["vigil_exporter_nvml_errors_total"] == {"no_permission": 2.0}  # once per GPU, not per cycle
    assert sim.gpm_samples_allocated() == 0


def test_a_pynvml_without_gpm_is_not_asked(fake_clock: FakeClock) -> None:
    class OldPynvml(TimedNvml):
        def __getattr__(self, name: str):
            if name.startswith(("nvmlGpm", "NVML_GPM", "c_nvmlGpm")):
                raise AttributeError(name)
            return super().__getattr__(name)

    old = OldPynvml(SimulatedNvml(NODE, 2, clock=fake_clock))
    collector = collector_of(old, fake_clock)
    for _ in range(3):
        page = cycle(collector, fake_clock)
    assert not set(PROFILING) & set(page) and "vigil_exporter_nvml_errors_total" not in page
    assert page["vigil_gpu_up"] == {"0": 1.0, "1": 1.0}


def test_a_failing_metric_is_skipped_alone(fake_clock: FakeClock) -> None:
    sim = SimulatedNvml(NODE, 2, clock=fake_clock, unsupported=frozenset({"NVML_GPM_METRIC_DRAM_BW_UTIL"}))
    collector = collector_of(sim, fake_clock)
    for _ in range(3):
        page = cycle(collector, fake_clock)
    assert profiled_gpus(page) == {name: set() if name == "vigil_gpu_dram_active_ratio" else {"0", "1"}
                                   for name in PROFILING}
    assert "vigil_exporter_nvml_errors_total" not in page


def test_a_lost_gpu_drops_its_sample_and_starts_a_new_pair_when_back(fake_clock: FakeClock) -> None:
    sim = SimulatedNvml(NODE, 4, clock=fake_clock)
    collector = collector_of(sim, fake_clock)
    cycle(collector, fake_clock)
    sim.inject(Fault("xid79", NODE, 2, fake_clock.t))
    page = cycle(collector, fake_clock)
    assert page["vigil_gpu_up"]["2"] == 0
    assert profiled_gpus(page) == {name: {"0", "1", "3"} for name in PROFILING}
    assert sim.gpm_samples_allocated() == 3  # GPU 2's sample was freed with the GPU
    sim.reset(2)
    page = cycle(collector, fake_clock)
    assert page["vigil_gpu_up"]["2"] == 1 and "2" not in page["vigil_gpu_sm_active_ratio"]  # one sample so far
    page = cycle(collector, fake_clock)
    assert profiled_gpus(page) == {name: {"0", "1", "2", "3"} for name in PROFILING}


def test_a_driver_reload_frees_the_old_sessions_samples(fake_clock: FakeClock) -> None:
    sim = SimulatedNvml(NODE, 2, clock=fake_clock)
    collector = collector_of(sim, fake_clock)
    cycle(collector, fake_clock)
    sim.unload_driver()
    cycle(collector, fake_clock)
    sim.load_driver()
    page = cycle(collector, fake_clock)
    assert "vigil_gpu_sm_active_ratio" not in page and sim.gpm_samples_allocated() == 2  # a new pair begins
    page = cycle(collector, fake_clock)
    assert set(page["vigil_gpu_sm_active_ratio"]) == {"0", "1"}


def test_the_simulated_gpm_is_deterministic_and_checks_its_arguments(fake_clock: FakeClock) -> None:
    import pynvml

    def metrics(sim: SimulatedNvml, first, second) -> list[float]:
        request = pynvml.c_nvmlGpmMetricsGet_t()
        request.version, request.numMetrics = pynvml.NVML_GPM_METRICS_GET_VERSION, 1
        request.sample1, request.sample2 = first, second
        request.metrics[0].metricId = pynvml.NVML_GPM_METRIC_SM_UTIL
        sim.nvmlGpmMetricsGet(request)
        return [request.metrics[0].nvmlReturn, request.metrics[0].value]

    answers = []
    for _ in range(2):
        sim = SimulatedNvml(NODE, 2, clock=FakeClock(fake_clock.t))
        sim.nvmlInit()
        gpu0, gpu1 = sim.nvmlDeviceGetHandleByIndex(0), sim.nvmlDeviceGetHandleByIndex(1)
        a, b, c = sim.nvmlGpmSampleAlloc(), sim.nvmlGpmSampleAlloc(), sim.nvmlGpmSampleAlloc()
        sim.nvmlGpmSampleGet(gpu0, a)
        sim.clock.advance(INTERVAL)
        sim.nvmlGpmSampleGet(gpu0, b)
        sim.nvmlGpmSampleGet(gpu1, c)
        answers.append(metrics(sim, a, b))
        with pytest.raises(pynvml.NVMLError_InvalidArgument):
            metrics(sim, a, c)  # samples of two GPUs
        with pytest.raises(pynvml.NVMLError_InvalidArgument):
            metrics(sim, b, a)  # the later sample first
        sim.inject(Fault("xid79", NODE, 0, sim.clock()))
        with pytest.raises(pynvml.NVMLError_GpuIsLost):
            metrics(sim, a, b)
        for sample in (a, b, c):
            sim.nvmlGpmSampleFree(sample)
        with pytest.raises(pynvml.NVMLError_InvalidArgument):
            sim.nvmlGpmSampleFree(a)  # freed twice
    assert answers[0] == answers[1] and answers[0][0] == pynvml.NVML_SUCCESS and 0 < answers[0][1] <= 100
