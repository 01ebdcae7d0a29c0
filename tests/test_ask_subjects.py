"""`vigil ask` on what a question names besides a metric (issue 13): a state only a rule defines ("hung":
the JobHung alert), a component of the stack ("the notifier": its own metrics and `up` of its scrape job),
a person ("ana": the per-person label, or a refusal saying there is none) and an XID described in words
("fell off the bus": XID 79). Each was once answered wrongly; the answers are checked by their metric and
matchers, and run as a user runs them (`vigil ask --json --run`) against a real Prometheus (the Debian
2.42 binary, started by vigil's read-back of a stopped stack's TSDB) on series backfilled with promtool,
where each old wrong answer would return other series."""

from __future__ import annotations

import json
import re
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest

from stack_support import vigil
from vigil.aiops.ask.answer import ask
from vigil.aiops.ask.judge import judge_one, load_questions
from vigil.aiops.ask.knowledge import load_knowledge
from vigil.aiops.ask.retrieve import Unanswerable
from vigil.aiops.history.openmetrics import write_openmetrics
from vigil.common.prometheus_api import PrometheusClient
from vigil.rules.query import read_query
from vigil.stack.config import RunLayout
from vigil.stack.tsdb_readback import tsdb_prometheus

EVAL = Path(__file__).resolve().parent.parent / "bench" / "ask" / "eval_questions.yaml"
HUNG = ("ALERTS", {"alertname": "JobHung", "alertstate": "firing"})
NOTIFIER_UP = ("up", {"job": "vigil-notifier"})
ANA = ("vigil_oncall_pages", {"person": "ana"})
XID79 = ("vigil_gpu_xid_errors_total", {"xid": "79"})

# (question, the one metric it reads and its matchers, the window of its range vector or None)
ANSWERS = [
    ("which jobs are hung?", HUNG, None),
    ("which training jobs have hung?", HUNG, None),
    ("is the notifier healthy?", NOTIFIER_UP, None),
    ("is the notifier alive right now?", NOTIFIER_UP, None),
    ("how many pages did ana get", ANA, None),
    ("how many times was ana paged?", ANA, None),
    ("which GPUs fell off the bus in the last day", XID79, "1d"),
    ("which GPUs have fallen off the bus today?", XID79, "1d"),
]


def _selector(promql: str) -> tuple[str, dict[str, str]]:
    reading = read_query(promql, load_knowledge().labels)
    assert len(reading.selectors) == 1, promql
    selector = reading.selectors[0]
    return selector.name, {label: value for label, op, value in selector.matchers if label != "__name__" and op == "="}


@pytest.mark.parametrize("question, selector, window", ANSWERS)
def test_the_named_thing_becomes_the_metric_and_its_matchers(question, selector, window):
    answer = ask(question)
    assert _selector(answer.promql) == selector, answer.promql
    assert answer.metrics == [selector[0]]
    assert (f"[{window}]" in answer.promql) == bool(window), answer.promql


def test_counting_questions_count_what_was_named():
    assert ask("how many pages did ana get").promql == 'sum(vigil_oncall_pages{person="ana"})'
    assert ask("how many jobs are hung right now?").promql == 'count(ALERTS{alertname="JobHung", alertstate="firing"})'
    assert ask("how many GPUs fell off the bus in the last day?").promql == \
        'count(increase(vigil_gpu_xid_errors_total{xid="79"}[1d]) > 0)'
    assert ask("is the notifier down?").promql == 'up{job="vigil-notifier"} == 0'


@pytest.mark.parametrize("question", ["how many escalations did ana get?", "webhooks rejected for ana in the last day"])
def test_a_person_on_a_metric_without_a_per_person_label_is_refused_saying_so(question):
    with pytest.raises(Unanswerable, match="'ana' reads as a person.*no per-person label"):
        ask(question)
    result = vigil("ask", question, "--json")
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert set(json.loads(result.stdout)) == {"error"} and "per-person" in result.stderr


def test_a_person_on_a_metric_with_a_user_label_filters_it():
    assert ask("which jobs does bob run?").promql == 'vigil_job_info{user="bob"}'


def test_other_components_are_not_taken_for_the_notifier_nor_the_notifier_for_them():
    assert ask("is alertmanager healthy?").promql == 'up{job="alertmanager"}'
    assert ask("how many webhooks did the notifier receive in the last 6 hours?").promql == \
        "sum(increase(vigil_notifier_webhook_received_total[6h]))"
    assert ask("Which disks failed their SMART health check?").promql == "vigil_disk_smart_healthy == 0"


@pytest.fixture(scope="module")
def prometheus(tmp_path_factory):
    """A Prometheus on a day and a half of series, up to a minute ago, where every old wrong answer
    returns something else: 3 GPUs held by jobs, one of them hung (JobHung fires for job 42 only); the
    notifier up while a SMART check failed; pages to ana and to bob; XID 79 on GPU 2 of node-1 three hours
    ago, on GPU 0 of node-2 two days ago (not the last day) and XID 13 on GPU 0 of node-1; node-9's two GPUs
    draw +Inf and -Inf watts."""
    work = tmp_path_factory.mktemp("ask-prom")
    end = time.time() - 60
    end -= end % 60
    t = end - 300.0 * np.arange(2 * 288)[::-1]
    ones, zeros = np.ones(t.size), np.zeros(t.size)
    gpu = {"instance": "node-1:9400", "job": "vigil-gpu", "node": "node-1", "uuid": "GPU-1"}
    series = [("vigil_gpu_job", {**gpu, "gpu": str(i), "job_id": job}, t, ones) for i, job in ((0, "42"), (1, "42"), (3, "7"))]
    series += [
        ("ALERTS", {"alertname": "JobHung", "alertstate": "firing", "job_id": "42", "severity": "critical",
                    "team": "jobs", "tenant": "ml", "user": "bob"}, t, ones),
        ("ALERTS", {"alertname": "JobGpusIdle", "alertstate": "firing", "job_id": "7", "severity": "warning",
                    "team": "jobs", "tenant": "cv", "user": "eve"}, t, ones),
        ("up", {"job": "vigil-notifier", "instance": "127.0.0.1:9300"}, t, ones),
        ("up", {"job": "vigil-node-health", "instance": "127.0.0.1:9500", "node": "node-1"}, t, ones),
        ("vigil_disk_smart_healthy", {"job": "vigil-node-health", "node": "node-1", "device": "sda"}, t, zeros),
        *[("vigil_oncall_pages", {"job": "vigil-notifier", "team": "gpu", "person": person, "channel": channel,
                                  "outside_hours": "false"}, t, np.full(t.size, count))
          for person, channel, count in (("ana", "phone", 3.0), ("ana", "sms", 2.0), ("bob", "phone", 7.0))],
        ("vigil_gpu_xid_errors_total", {**gpu, "gpu": "2", "xid": "79", "class": "critical"}, t, (t > end - 3 * 3600) * 1.0),
        ("vigil_gpu_xid_errors_total", {**gpu, "node": "node-2", "gpu": "0", "xid": "79", "class": "critical"}, t,
         (t > end - 2 * 86400 + 3600) * 1.0),
        ("vigil_gpu_xid_errors_total", {**gpu, "gpu": "0", "xid": "13", "class": "application"}, t, np.cumsum(ones)),
        # values JSON cannot hold as numbers (a broken sensor's reading)
        *[("vigil_gpu_power_watts", {**gpu, "node": "node-9", "gpu": str(i)}, t, np.full(t.size, v))
          for i, v in enumerate((np.inf, -np.inf))],
    ]
    write_openmetrics(work / "history.om", series, types={"vigil_gpu_xid_errors_total": "counter"})
    run_dir = work / "run"  # a stopped stack's run directory, read back by vigil's own temporary Prometheus
    subprocess.run(["promtool", "tsdb", "create-blocks-from", "openmetrics", "--max-block-duration=24h",
                    str(work / "history.om"), str(RunLayout(run_dir).prometheus_data)], check=True, capture_output=True)
    with tsdb_prometheus(run_dir) as client:
        yield client.url


def _run(question: str, url: str) -> list[tuple[dict, float]]:
    result = vigil("ask", question, "--json", "--run", "--prometheus", url)
    assert result.returncode == 0, result.stderr
    return [({k: v for k, v in row["labels"].items() if k != "__name__"}, row["value"])
            for row in json.loads(result.stdout)["result"]]


@pytest.mark.e2e
@pytest.mark.parametrize("question", ["which jobs are hung?", "are any training jobs hanging?"])
def test_hung_jobs_are_the_ones_jobhung_fires_for_not_every_gpu_held(prometheus, question):
    rows = _run(question, prometheus)
    assert [(labels["job_id"], labels["user"], value) for labels, value in rows] == [("42", "bob", 1.0)]


@pytest.mark.e2e
@pytest.mark.parametrize("question", ["is the notifier healthy?", "notifier health"])
def test_the_notifiers_health_is_its_scrape_target(prometheus, question):
    assert _run(question, prometheus) == [({"job": "vigil-notifier", "instance": "127.0.0.1:9300"}, 1.0)]


@pytest.mark.e2e
@pytest.mark.parametrize("question", ["how many pages did ana get", "how many times was ana paged?"])
def test_the_pages_a_person_got_are_hers_only(prometheus, question):
    assert [value for _, value in _run(question, prometheus)] == [5.0]


@pytest.mark.e2e
@pytest.mark.parametrize("question", ["which GPUs fell off the bus in the last day",
                                      "which GPUs dropped off the bus in the past 24 hours?"])
def test_the_gpus_that_fell_off_the_bus_in_the_last_day(prometheus, question):
    rows = _run(question, prometheus)
    assert [(labels["node"], labels["gpu"], labels["xid"]) for labels, _ in rows] == [("node-1", "2", "79")]
    assert all(value > 0 for _, value in rows)


@pytest.mark.e2e
def test_the_bench_judges_the_issue_questions_right_on_this_prometheus(prometheus):
    """The bench's judge on its questions about these four things: each answer's result is the gold's."""
    about = re.compile(r"\b(hung|hanging|notifier (health|healthy|up|alive)|ana|off the bus)\b")
    questions = [q for q in load_questions(EVAL) if about.search(q["question"])]
    assert len(questions) >= 12
    client, knowledge = PrometheusClient(prometheus, timeout=10), load_knowledge()
    outcomes = [judge_one(q, client, time.time(), knowledge) for q in questions]
    assert [f"{o.question}: {o.predicted} ({o.why})" for o in outcomes if not o.correct] == []
    assert sum(o.gold_series > 0 for o in outcomes) == len(outcomes)  # judged on results, not on empty ones


@pytest.mark.e2e
def test_infinite_results_are_written_as_prometheus_spells_them_in_json_and_text(prometheus):
    result = vigil("ask", "GPU power draw on node-9", "--json", "--run", "--prometheus", prometheus)
    assert result.returncode == 0, result.stderr

    def not_json(constant):
        raise AssertionError(f"{constant} is not JSON")
    rows = json.loads(result.stdout, parse_constant=not_json)["result"]
    assert sorted((row["labels"]["gpu"], row["value"]) for row in rows) == [("0", "+Inf"), ("1", "-Inf")]
    text = vigil("ask", "GPU power draw on node-9", "--run", "--prometheus", prometheus)
    assert text.returncode == 0 and "Traceback" not in text.stderr, text.stderr
    assert re.search(r'gpu=0, .*\} \+Inf\n', text.stdout) and re.search(r'gpu=1, .*\} -Inf\n', text.stdout), text.stdout
