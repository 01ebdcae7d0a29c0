"""NVLink error counters: one total per GPU and counter by default (link="all", as dcgm-exporter), per link
only with `--nvlink-per-link`."""

from __future__ import annotations

import requests
from sim_clock import FakeClock
from exporters_nvml_support import free_ports, run_until_ready, stop
from prometheus_client.parser import text_string_to_metric_families

from vigil.exporters.nvml_collector import NvmlCollector
from vigil.exporters.sim.faults import NVLINK_FAULTY_LINKS, Fault
from vigil.exporters.sim.nvml import SimulatedNvml

NODE, GPUS, LINKS, FAULTY_GPU = "node-1", 2, 18, "1"
NAME = "vigil_gpu_nvlink_errors_total"
FRIDAY_NOON = 1_763_726_400.0  # GPUs busy


def nvlink_series(text: str) -> list[tuple[dict[str, str], float]]:
    return [(s.labels, s.value) for f in text_string_to_metric_families(text) for s in f.samples if s.name == NAME]


def faulty_sim(**kwargs) -> tuple[SimulatedNvml, FakeClock]:
    """Two GPUs whose second has erroring NVLinks for 10 s."""
    clock = FakeClock(FRIDAY_NOON)
    sim = SimulatedNvml(NODE, GPUS, clock=clock, **kwargs)
    sim.inject(Fault("nvlink-errors", NODE, int(FAULTY_GPU), clock.t))
    return sim, clock


def collect(sim: SimulatedNvml, clock: FakeClock, **kwargs) -> list[tuple[dict[str, str], float]]:
    collector = NvmlCollector(sim, NODE, watch_xids=False, clock=clock, **kwargs)
    collector.refresh()
    clock.t += 10
    collector.refresh()
    return nvlink_series(collector.exposition().decode())


def test_default_is_one_total_per_gpu_and_counter_equal_to_the_sum_over_links() -> None:
    sim, clock = faulty_sim()
    totals = collect(sim, clock)
    sim_per_link, clock_per_link = faulty_sim()
    per_link = collect(sim_per_link, clock_per_link, nvlink_per_link=True)

    assert {labels["link"] for labels, _ in totals} == {"all"}
    assert len(totals) == GPUS * 3  # replay, recovery, crc_flit from the batched fields
    assert len(per_link) == GPUS * LINKS * 3
    assert {labels["link"] for labels, _ in per_link} == {str(link) for link in range(LINKS)}
    for error_type in ("replay", "recovery", "crc_flit"):
        for gpu in ("0", "1"):
            [total] = [v for labels, v in totals if labels["gpu"] == gpu and labels["error_type"] == error_type]
            summed = sum(v for labels, v in per_link if labels["gpu"] == gpu and labels["error_type"] == error_type)
            assert total == summed
    [faulty] = [v for labels, v in totals if labels["gpu"] == FAULTY_GPU and labels["error_type"] == "crc_flit"]
    assert faulty == 200 * len(NVLINK_FAULTY_LINKS)  # 20/s for 10 s on each faulty link


def test_without_field_batching_the_total_sums_the_per_link_calls_with_crc_data() -> None:
    sim, clock = faulty_sim(unsupported=frozenset({"nvmlDeviceGetFieldValues"}))
    totals = collect(sim, clock)
    assert {labels["link"] for labels, _ in totals} == {"all"}
    assert {labels["error_type"] for labels, _ in totals} == {"replay", "recovery", "crc_flit", "crc_data"}
    [crc_data] = [v for labels, v in totals if labels["gpu"] == FAULTY_GPU and labels["error_type"] == "crc_data"]
    assert crc_data == 200 * len(NVLINK_FAULTY_LINKS)


def test_cli_flag_turns_per_link_series_on() -> None:
    pages = {}
    for flags in ([], ["--nvlink-per-link"]):
        base = free_ports(2)
        proc = run_until_ready(["--backend", "sim", "--sim-nodes", "1", "--sim-gpus", "1", "--listen", f"127.0.0.1:{base}",
                                "--control-listen", f"127.0.0.1:{base + 1}", *flags],
                               f"http://127.0.0.1:{base + 1}/healthz")
        try:
            pages[bool(flags)] = requests.get(f"http://127.0.0.1:{base}/metrics", timeout=5).text
        finally:
            stop(proc)
    assert {labels["link"] for labels, _ in nvlink_series(pages[False])} == {"all"}
    assert len(nvlink_series(pages[True])) == LINKS * 3
