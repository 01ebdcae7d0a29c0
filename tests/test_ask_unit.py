"""`vigil ask` offline: questions outside the example bank compose into valid PromQL over existing metrics;
the composition follows the question's pieces; validation refuses what vigil does not have."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
import yaml

from vigil.aiops.ask.answer import ask
from vigil.aiops.ask.examples import load_examples
from vigil.aiops.ask.judge import same_answer
from vigil.aiops.ask.knowledge import load_knowledge
from vigil.aiops.ask.retrieve import Unanswerable
from vigil.aiops.ask.validate import InvalidQuery, validate
from vigil.rules.query import read_query

EVAL = Path(__file__).resolve().parent.parent / "bench" / "ask" / "eval_questions.yaml"

# none of these is in the bank (checked below); each names a different metric, shape or filter
NEW_QUESTIONS = [
    "which GPUs on node-3 ran hottest in the last hour?",
    "coolest GPU on node-2 over the past 45 minutes",
    "top 2 GPUs by fan speed",
    "average GPU memory utilization by node over the last 3 hours",
    "how many GPUs are using more than 20 GB of memory?",
    "how many uncorrected ECC errors did GPU 3 on node-1 log this week?",
    "rate of XID 48 errors per node",
    "which disks have NVMe media errors?",
    "how many critical alerts does team gpu have?",
    "SMS deliveries that were muted in the last 2 days",
    "the largest GPU failure risk per node",
    "upper baseline band of GPU 1 on node-2",
    "free filesystem space as a percentage on node-2",
    "network bytes received by node-1 in the last 10 minutes",
    "which nodes run short of available memory below 2 GB",
    "energy used per GPU today",
]


@pytest.fixture(scope="module")
def knowledge():
    return load_knowledge()


def _normal(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", " ", text.lower()).strip()


def test_the_new_questions_are_not_in_the_bank():
    bank = {_normal(example.question) for example in load_examples()}
    assert not bank & {_normal(q) for q in NEW_QUESTIONS}


@pytest.mark.parametrize("question", NEW_QUESTIONS)
def test_a_question_outside_the_bank_yields_valid_promql_over_existing_metrics(question, knowledge):
    answer = ask(question, knowledge)
    assert answer.metrics and all(name in knowledge.catalog.metrics for name in answer.metrics)
    reading = read_query(answer.promql, knowledge.labels)  # parses (the rule lint's parser)
    for selector in reading.selectors:
        labels = knowledge.labels(selector.name)
        if labels is not None:
            assert {label for label, _, _ in selector.matchers} - {"__name__"} <= labels, answer.promql
    assert answer.explanation


def test_the_hottest_gpus_of_a_node_in_a_window_compose_from_their_pieces(knowledge):
    promql = ask("which GPUs on node-3 ran hottest in the last hour?", knowledge).promql
    assert promql == 'sort_desc(max_over_time(vigil_gpu_temperature_celsius{node="node-3", sensor="gpu"}[1h]))'


@pytest.mark.parametrize("question, expected", [
    ("how many uncorrected ECC errors did GPU 3 on node-1 log this week?",
     'increase(vigil_gpu_ecc_errors_total{counter_type="aggregate", error_type="uncorrected", gpu="3", node="node-1"}[7d])'),
    ("top 2 GPUs by fan speed", "topk(2, vigil_gpu_fan_speed_ratio)"),
    ("average GPU memory utilization by node over the last 3 hours",
     "avg by (node) (avg_over_time(vigil_gpu_memory_utilization_ratio[3h]))"),
    ("how many GPUs are using more than 20 GB of memory?", "count(vigil_gpu_memory_used_bytes > 20000000000)"),
    ("how many critical alerts does team gpu have?", 'count(ALERTS{alertstate="firing", severity="critical", team="gpu"})'),
    ("rate of XID 48 errors per node", 'sum by (node) (rate(vigil_gpu_xid_errors_total{xid="48"}[5m]))'),
    ("the largest GPU failure risk per node", 'max by (node) (vigil_failure_risk{kind="gpu"})'),
    # "the hottest GPU" asks which GPU it is (and how hot), not only the temperature; the highest temperature is a value
    ("hottest GPU", 'topk(1, vigil_gpu_temperature_celsius{sensor="gpu"})'),
    ("the busiest GPUs on node-2", 'sort_desc(vigil_gpu_utilization_ratio{node="node-2"})'),
    ("highest GPU temperature", 'max(vigil_gpu_temperature_celsius{sensor="gpu"})'),
    # the GPU-wide last-XID time has no `xid` label: the per-XID one answers rather than dropping the filter
    ("when did XID 79 last happen on node-1?", 'vigil_gpu_xid_last_seen_timestamp_seconds{node="node-1", xid="79"}'),
    ("when was the last XID on node-2?", 'vigil_gpu_last_xid_timestamp_seconds{node="node-2"}'),
    # ... but a metric with the label that measures something else does not displace the one asked about
    ("disk read errors on node-1 gpu 0", 'node_disk_read_bytes_total{node="node-1"}'),
    ("free disk on node-1 gpu 2", 'node_filesystem_free_bytes{node="node-1"}'),
])
def test_counters_units_filters_and_groups_compose_as_an_operator_would(question, expected, knowledge):
    assert ask(question, knowledge).promql == expected


@pytest.mark.parametrize("question", ["what's the weather in Paris", "who won the football match yesterday",
                                      "", "   ", "x" * 600])
def test_a_question_no_metric_answers_is_refused_with_a_reason(question, knowledge):
    with pytest.raises(Unanswerable) as refused:
        ask(question, knowledge)
    assert str(refused.value)


@pytest.mark.parametrize("promql, problem", [
    ("vigil_gpu_temperature", "unknown metric vigil_gpu_temperature"),
    ('vigil_gpu_temperature_celsius{rack="a"}', "has no label 'rack'"),
    ("max by (rack) (vigil_gpu_power_watts)", "label 'rack'"),
    ("sum(rate(vigil_gpu_xid_errors_total[5m])", "not valid PromQL"),
])
def test_validation_refuses_unknown_metrics_labels_and_broken_syntax(promql, problem, knowledge):
    with pytest.raises(InvalidQuery, match=re.escape(problem)):
        validate(promql, knowledge)


def test_every_bank_example_is_valid_and_no_eval_question_is_in_the_bank(knowledge):
    for example in load_examples():
        assert validate(example.promql, knowledge), example.question
        assert example.reasoning, f"{example.question}: a worked example explains its steps"
    questions = yaml.safe_load(EVAL.read_text())["questions"]
    assert len(questions) >= 150
    bank = {_normal(example.question) for example in load_examples()}
    assert not bank & {_normal(q["question"]) for q in questions}, "the evaluation questions are held out"
    for entry in questions:  # gold queries name only what exists too
        validate(entry["gold"], knowledge)


def _rows(*series):
    return [{"labels": labels, "value": value} for labels, value in series]


def test_the_execution_judge_compares_label_sets_and_values_not_names_or_order():
    gpu0, gpu1 = {"node": "node-1", "gpu": "0"}, {"node": "node-1", "gpu": "1"}
    gold = _rows(({**gpu0, "__name__": "vigil_gpu_power_watts"}, 100.0), (gpu1, 200.0))
    assert same_answer(gold, _rows((gpu1, 200.0), (gpu0, 100.0)))[0]  # no __name__, other order: alike
    assert not same_answer(gold, _rows((gpu0, 100.0), (gpu1, 201.0)))[0]
    assert not same_answer(gold, _rows((gpu0, 100.0)))[0]
    assert same_answer(_rows(({}, 3.0)), _rows(({"node": "node-1"}, 3.0)))[0]  # one number each: the value
    target = {"job": "vigil-notifier", "instance": "127.0.0.1:9703"}
    per_tier = _rows(({**target, "tier": "0"}, 1.0), ({**target, "tier": "1"}, 2.0))
    assert same_answer(per_tier, _rows(({"tier": "1"}, 2.0), ({"tier": "0"}, 1.0)))[0]  # `sum by (tier)`: alike
    assert not same_answer(per_tier, _rows(({"tier": "1"}, 2.0), ({"tier": "0"}, 1.5)))[0]
    assert not same_answer(_rows((gpu0, 1.0), ({"node": "node-2", "gpu": "0"}, 2.0)),
                           _rows(({"gpu": "0"}, 1.0), ({"gpu": "0"}, 2.0)))[0]  # `gpu` alone tells them not apart
    assert same_answer([], [], {"up"}, {"up"})[0]
    assert not same_answer([], [], {"up"}, {"vigil_gpu_up"})[0]  # empty from the wrong metric is wrong


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.sampled_from(["gpu", "node-2", "hottest", "per node", "in the last hour", "top 3", "how many",
                                  "above 50", "errors", "ALERTS", "disk", "rate", "which", "team gpu", "GPU 1", "%",
                                  "?", "{", "\"", "'", "=", "xid 79", "below 10%", "memory", "fraction", "down", "zzz",
                                  "per second", "by severity", "average", "today", "job 123456", "nvme0n1"]) | st.text(max_size=8),
                max_size=10).map(" ".join))
def test_any_text_is_answered_with_a_valid_query_or_refused_never_a_crash(knowledge, text):
    try:
        answer = ask(text, knowledge)
    except Unanswerable as refused:
        assert str(refused)
        return
    assert validate(answer.promql, knowledge) == answer.metrics


@pytest.mark.parametrize("team", ["ml+ops", "ML-Infra", "gpu(a)"])
def test_a_team_name_is_matched_as_text_whatever_its_characters(team, knowledge):
    teams = dataclasses.replace(knowledge, alerts={**knowledge.alerts, "SomeAlert": ("critical", team)})
    answer = ask(f"how many critical alerts does team {team.lower()} have?", teams)
    assert answer.promql == f'count(ALERTS{{alertstate="firing", severity="critical", team="{team}"}})'
