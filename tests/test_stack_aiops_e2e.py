"""End to end with AIOps: `vigil up` backfills 14 days of simulated history into the real Prometheus,
the AIOps service trains on it at start, baselines are scraped from the first minute, and a GPU whose
load leaves its daily pattern is paged by the baseline rule (not by a fixed threshold)."""

from __future__ import annotations

import json
import time

import pytest

from stack_support import RunningStack, start_stack
from vigil.common.prometheus_api import PrometheusClient, Sample

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    running = start_stack(tmp_path_factory.mktemp("aiops-stack"), nodes=2, gpus=2, aiops=True, node_health=True, backfill_days=14)
    yield running
    assert running.cli("down").returncode == 0


def query(stack: RunningStack, promql: str) -> list[Sample]:
    return PrometheusClient(stack.url("prometheus"), timeout=5).query(promql)


def test_history_is_backfilled_into_the_live_series(stack: RunningStack):
    counts = query(stack, "count_over_time(vigil_gpu_utilization_ratio[15d])")
    assert len(counts) == 4  # history and live samples are one series per GPU, not two
    assert all(value >= 14 * 288 for _, value in counts)


def wait_for_series(stack: RunningStack, promql: str, count: int, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while len(query(stack, promql)) < count and time.monotonic() < deadline:
        time.sleep(0.5)


def test_baselines_are_scraped_from_the_start_for_every_gpu(stack: RunningStack):
    wait_for_series(stack, 'vigil_baseline_lower{metric="vigil_gpu_utilization_ratio"}', 4)
    wait_for_series(stack, "vigil_gpu_utilization_ratio", 4)  # first live scrape of both nodes
    lower = {(labels["node"], labels["gpu"]): value for labels, value in query(stack, 'vigil_baseline_lower{metric="vigil_gpu_utilization_ratio"}')}
    upper = {(labels["node"], labels["gpu"]): value for labels, value in query(stack, 'vigil_baseline_upper{metric="vigil_gpu_utilization_ratio"}')}
    assert set(lower) == set(upper) == {("node-1", "0"), ("node-1", "1"), ("node-2", "0"), ("node-2", "1")}
    assert all(lower[k] < upper[k] for k in lower)
    # the live values sit inside the learned band: the baseline fits the simulated daily pattern
    inside = query(stack, 'vigil_gpu_utilization_ratio > on(node, gpu) group_left() vigil_baseline_lower{metric="vigil_gpu_utilization_ratio"} '
                          '< on(node, gpu) group_left() vigil_baseline_upper{metric="vigil_gpu_utilization_ratio"}')
    assert len(inside) >= 3


def test_load_leaving_its_pattern_is_paged_by_the_baseline_rule(stack: RunningStack):
    result = stack.cli("drill", "load-anomaly", "--node", "node-2", "--gpu", "1", "--timeout", "60", "--json", timeout=600)
    report = json.loads(result.stdout)
    assert result.returncode == 0 and report["ok"], report
    pages = json.loads(stack.cli("inbox", "--json").stdout)["pages"]
    firing = [p for p in pages if p["status"] == "firing" and p["labels"].get("alertname") == "GpuLoadOutsideBaseline"]
    assert {(p["labels"]["node"], p["labels"]["gpu"]) for p in firing} == {("node-2", "1")}, "only the broken GPU is paged"
    assert firing[0]["labels"]["severity"] == "warning"


def test_failure_risk_is_exported_for_gpus_and_for_disks_once_the_disk_model_is_trained(stack: RunningStack):
    # The first start trains the disk model in the background; the AIOps service picks it up.
    wait_for_series(stack, 'vigil_failure_risk{kind="gpu"}', 4, timeout=60)
    gpu = query(stack, 'vigil_failure_risk{kind="gpu"}')
    assert {(labels["node"], labels["gpu"]) for labels, _ in gpu} == {("node-1", "0"), ("node-1", "1"), ("node-2", "0"), ("node-2", "1")}
    assert all(0 <= value <= 1 for _, value in gpu)
    wait_for_series(stack, 'vigil_failure_risk{kind="disk"}', 1, timeout=120)
    disks = query(stack, 'vigil_failure_risk{kind="disk"}')
    assert disks and all(labels.get("device") for labels, _ in disks)
    assert all(0 <= value <= 1 for _, value in disks)
