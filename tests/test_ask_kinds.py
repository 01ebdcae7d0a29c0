"""`vigil ask` on the kinds of question that failed when written outside the project (issue 33): scope
words, counting things, what a label means (XID code, SMART attribute names, "per job"), records over a
window, typos. Each kind is checked with questions in neither the tuning set (bench/ask/eval_questions.yaml,
aiops/ask/examples.yaml) nor the outside set (bench/ask/outside_questions.yaml)."""

from __future__ import annotations


import pytest

from ask_support import normal, questions_in_sets
from vigil.aiops.ask.answer import ask
from vigil.aiops.ask.knowledge import load_knowledge
from vigil.aiops.ask.spelling import mend

SCOPE = [
    ("fleet-wide memory use as a fraction of all GPU memory",
     "sum(vigil_gpu_memory_used_bytes) / sum(vigil_gpu_memory_total_bytes)"),
    ("memory used fraction of every GPU on node-3",
     'vigil_gpu_memory_used_bytes{node="node-3"} / vigil_gpu_memory_total_bytes{node="node-3"}'),
    ("what fraction of each node's GPU memory is used?",
     "sum by (node) (vigil_gpu_memory_used_bytes) / sum by (node) (vigil_gpu_memory_total_bytes)"),
    ("each node's share of the fleet's GPU power draw",
     "sum by (node) (vigil_gpu_power_watts) / ignoring (node) group_left () sum(vigil_gpu_power_watts)"),
    ("what fraction of all GPUs are hotter than 70 degrees?",
     'count(vigil_gpu_temperature_celsius{sensor="gpu"} > 70) / count(vigil_gpu_temperature_celsius{sensor="gpu"})'),
    ("what fraction of page deliveries in the last 6 hours failed?",
     'sum(increase(vigil_notifier_deliveries_total{result="failed"}[6h])) / '
     'sum(increase(vigil_notifier_deliveries_total[6h]))'),
    ("overall GPU temperature of the cluster", 'avg(vigil_gpu_temperature_celsius{sensor="gpu"})'),
    ("total ECC errors of every GPU on node-1 in the last 2 hours",
     'sum by (node, gpu) (increase(vigil_gpu_ecc_errors_total{counter_type="aggregate", node="node-1"}[2h]))'),
    ("GPU temperature of node-2 averaged over 15 minutes",
     'avg_over_time(vigil_gpu_temperature_celsius{node="node-2", sensor="gpu"}[15m])'),
]
COUNTING = [
    ("how many GPUs sit on each host?", "count by (node) (vigil_gpu_up)"),
    ("how many GPUs are there in the whole fleet?", "count(vigil_gpu_up)"),
    ("how many disks are there on each node?", "count by (node) (vigil_disk_smart_read_ok)"),
    ("how many nodes run training jobs?", "count(count by (node) (vigil_gpu_job))"),
    ("how many scrape jobs are configured?", "count(count by (job) (up))"),
]
LABELS = [
    ("XID errors by xid code over the last 3 hours", "sum by (xid) (increase(vigil_gpu_xid_errors_total[3h]))"),
    ("pending sector count on node-2", 'vigil_disk_smart_attribute_raw{attribute_id="197", node="node-2"}'),
    ("which drives have reallocated sectors?", 'vigil_disk_smart_attribute_raw{attribute_id="5"} > 0'),
    ("SMART offline uncorrectable count of /dev/sdc on node-1",
     'vigil_disk_smart_attribute_raw{attribute_id="198", device="/dev/sdc", node="node-1"}'),
    ("average scrape duration of each scrape job", "avg by (job) (scrape_duration_seconds)"),
    ("which targets are down per scrape job?", "count by (job) (up == 0)"),
]
RECORDS = [
    ("mean GPU utilization per node over the past 90 minutes",
     "avg by (node) (avg_over_time(vigil_gpu_utilization_ratio[1h30m]))", "node:vigil_gpu_utilization:avg"),
    ("average GPU utilization per training job over the past 3 hours",
     "avg by (job_id) ((vigil_gpu_job * on (node, gpu) group_left () "
     "avg_over_time(vigil_gpu_utilization_ratio[3h])))", "job:vigil_gpu_utilization:avg"),
]


def test_these_questions_are_in_no_set():
    known = questions_in_sets()
    asked = [q for q, *_ in SCOPE + COUNTING + LABELS + RECORDS]
    assert not known & {normal(q) for q in asked}


@pytest.mark.parametrize("question, promql", SCOPE + COUNTING + LABELS)
def test_each_kind_is_read_from_its_words(question, promql):
    answer = ask(question)
    assert answer.promql == promql, answer.explanation
    assert not answer.readings  # one reading: nothing to ask back


@pytest.mark.parametrize("question, promql, record", RECORDS)
def test_a_record_over_a_window_is_read_from_its_raw_series_and_says_so(question, promql, record):
    answer = ask(question)
    assert answer.promql == promql
    assert record in answer.explanation and "since its rule was loaded" in answer.explanation


def test_a_record_without_a_window_is_still_the_record():
    assert ask("what is each training job's average GPU utilization right now?").promql == \
        "job:vigil_gpu_utilization:avg"


def test_per_job_on_per_gpu_series_is_the_training_job_through_the_gpu_to_job_series():
    answer = ask("GPU memory in use summed by training job")
    assert answer.promql == ("sum by (job_id) (vigil_gpu_memory_used_bytes * on (node, gpu) group_left (job_id) "
                             "vigil_gpu_job)")
    assert "vigil_gpu_job" in answer.metrics


@pytest.mark.parametrize("typed, meant", [
    ("hotest", "hottest"), ("temprature", "temperature"), ("tempreature", "temperature"), ("whcih", "which"),
    ("utilizaton", "utilization")])
def test_a_typo_one_slip_away_from_a_known_word_is_mended(typed, meant):
    text, changed = mend(f" {typed} gpu ", load_knowledge())
    assert text == f" {meant} gpu " and changed == [f"{typed} -> {meant}"]


@pytest.mark.parametrize("word", ["alice", "bob", "node-7", "sdb", "xid"])
def test_a_name_or_a_short_word_is_not_mended(word):
    assert mend(f" pages for {word} ", load_knowledge()) == (f" pages for {word} ", [])


def test_a_mended_question_is_answered_and_the_explanation_says_what_was_read():
    answer = ask("temperture of gpu 1 on node-2")
    assert answer.promql == 'vigil_gpu_temperature_celsius{gpu="1", node="node-2", sensor="gpu"}'
    assert "temperture -> temperature" in answer.explanation
