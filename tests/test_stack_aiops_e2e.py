"""End to end with AIOps: `vigil up` backfills 14 days of simulated history into the real Prometheus,
the AIOps service trains on it at start, baselines are scraped from the first minute, and a GPU whose
load leaves its daily pattern is paged by the baseline rule (not by a fixed threshold)."""

from __future__ import annotations

import http.client
import json
import re
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import requests

from stack_support import RunningStack, start_stack
from vigil.aiops.ask.judge import judge_one, load_questions
from vigil.aiops.ask.knowledge import load_knowledge
from vigil.common.prometheus_api import PrometheusClient, Sample

ASK_QUESTIONS = Path(__file__).resolve().parent.parent / "bench" / "ask" / "eval_questions.yaml"

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


def test_load_leaving_its_pattern_files_a_ticket_through_the_baseline_rule(stack: RunningStack):
    """Unusual load is worth a look in working hours, not a call: the baseline alert files a ticket."""
    result = stack.cli("drill", "load-anomaly", "--node", "node-2", "--gpu", "1", "--timeout", "60", "--json", timeout=600)
    assert result.stdout, result.stderr
    report = json.loads(result.stdout)
    assert result.returncode == 0 and report["ok"], report
    assert "ticket filed" in [stage["name"] for stage in report["stages"]]
    listed = json.loads(stack.cli("incidents", "list", "--json").stdout)
    opened = [i for i in (listed["incidents"] if isinstance(listed, dict) else listed)
              if i["labels"].get("alertname") == "GpuLoadOutsideBaseline"]
    assert {(i["labels"]["node"], i["labels"]["gpu"]) for i in opened} == {("node-2", "1")}, "only the broken GPU"
    assert opened[0]["labels"]["severity"] == "warning" and opened[0]["priority"] == "P5"


def test_failure_risk_is_exported_for_gpus_and_for_disks_once_the_disk_model_is_trained(stack: RunningStack):
    # The first start trains the disk model in the background; the AIOps service picks it up.
    wait_for_series(stack, 'vigil_failure_risk{kind="gpu"}', 4, timeout=60)
    gpu = query(stack, 'vigil_failure_risk{kind="gpu"}')
    assert {(labels["node"], labels["gpu"]) for labels, _ in gpu} == {("node-1", "0"), ("node-1", "1"), ("node-2", "0"), ("node-2", "1")}
    assert all(0 <= value <= 1 for _, value in gpu)
    # NVMe disks are scored from the start (calibrated weights shipped); SATA ones once the model exists
    wait_for_series(stack, 'vigil_failure_risk{kind="disk", device!~".*nvme.*"}', 1, timeout=120)
    disks = query(stack, 'vigil_failure_risk{kind="disk"}')
    assert disks and all(labels.get("device") for labels, _ in disks)
    assert any("nvme" in labels["device"] for labels, _ in disks)
    assert all(0 <= value <= 1 for _, value in disks)


def test_ask_runs_its_query_on_the_stacks_prometheus_from_the_cli_and_the_aiops_service(stack: RunningStack):
    """`vigil ask --run` and POST /api/v1/ask (docs/ask.md) answer with the query and its live result."""
    wait_for_series(stack, "vigil_gpu_power_watts", 4)
    result = stack.cli("ask", "total GPU power draw per node", "--json", "--run")
    assert result.returncode == 0, result.stderr
    body = json.loads(result.stdout)
    assert body["promql"] == "sum by (node) (vigil_gpu_power_watts)"
    assert sorted(row["labels"]["node"] for row in body["result"]) == ["node-1", "node-2"]
    assert all(row["value"] > 0 for row in body["result"])
    service = stack.url("aiops").removesuffix("/metrics")
    answer = requests.post(f"{service}/api/v1/ask", json={"question": "Which GPU is the hottest?", "run": True}, timeout=60)
    assert answer.status_code == 200, answer.text
    reply = answer.json()
    assert reply["metrics"] == ["vigil_gpu_temperature_celsius"] and len(reply["result"]) == 1
    refused = requests.post(f"{service}/api/v1/ask", json={"question": "what's the weather in Paris"}, timeout=60)
    assert refused.status_code == 422 and "weather" in refused.json()["error"]
    # a body sent in chunks has no length to read by: 411 saying so, not "not valid JSON"
    chunked = requests.post(f"{service}/api/v1/ask", data=iter([b'{"question": "GPU power"}']), timeout=60)
    assert chunked.status_code == 411 and "Content-Length" in chunked.json()["error"], chunked.text
    # a length over the limit is refused at once, without waiting for a body that may never come
    connection = http.client.HTTPConnection(urlsplit(service).hostname, urlsplit(service).port, timeout=10)
    connection.putrequest("POST", "/api/v1/ask")
    connection.putheader("Content-Length", "99999999999999999999")
    connection.endheaders()
    too_long = connection.getresponse()
    assert too_long.status == 413 and b"larger than" in too_long.read()
    connection.close()


def test_ask_execution_accuracy_on_a_slice_of_the_held_out_questions(stack: RunningStack):
    """The bench's judge on the questions this 2-node, 2-GPU stack can answer (nothing on node-3 or GPUs 2-3)."""
    questions = [q for q in load_questions(ASK_QUESTIONS) if q["category"] in ("gpu", "aiops", "alert")
                 and not re.search(r"node-3|gpu [23]", q["question"].lower())][::4]
    assert len(questions) >= 15
    client = PrometheusClient(stack.url("prometheus"), timeout=10)
    knowledge = load_knowledge()
    at = time.time()
    outcomes = [judge_one(q, client, at, knowledge) for q in questions]
    correct = sum(o.correct for o in outcomes)
    wrong = [f"{o.question}: {o.predicted} ({o.why})" for o in outcomes if not o.correct]
    assert correct / len(outcomes) >= 0.77, wrong
