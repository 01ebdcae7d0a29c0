"""`vigil ask` on the kinds of question the twelfth and thirteenth outside splits found wanting (issue 33,
2026-12-07, a session after the third round): a state word alone ("what's firing"), "the most idle", the
values of one label ("which driver versions"), how many GPUs a node is missing, a ratio said as "divided
by", an aside saying what is not meant, network interfaces by name, "did it reboot overnight", a fraction
"of all cores", "clock" with nothing saying which, two nodes compared, a value reached "at some point" of a
window, NVLink CRC errors, a ranked question an alert cannot answer, "who's running on", a person's GPUs
through the person's jobs ("how busy is erin's job"), now against then ("vs 20 minutes ago"). Every question
here is in no set (`test_these_questions_are_in_no_set`)."""

from __future__ import annotations

import pytest

from ask_support import assert_in_no_set, assert_one_reading
from vigil.aiops.ask.answer import ask
from vigil.aiops.ask.retrieve import Unanswerable

ONE_READING = [
    # a word that fixes a label's value and names its metric too: the question needs no other
    ("what is firing?", 'ALERTS{alertstate="firing"}'),
    # "the most idle" is the least busy
    ("which gpu on node-2 is the most idle", 'bottomk(1, vigil_gpu_utilization_ratio{node="node-2"})'),
    # the values of one label, each counted (an info series is 1 per thing: counted, never averaged)
    ("what cuda versions do our gpus run", "count by (cuda) (vigil_gpu_info)"),
    ("which gpu models are in the cluster", "count by (name) (vigil_gpu_info)"),
    # how many GPUs a node is missing: expected less visible
    ("how many gpus is node-3 short of what it should have",
     'vigil_node_gpus_expected{node="node-3"} - vigil_node_gpus_visible{node="node-3"}'),
    # a ratio said as a division
    ("gpu power draw divided by the power limit on node-2",
     'vigil_gpu_power_watts{node="node-2"} / vigil_gpu_power_limit_watts{node="node-2"}'),
    # an aside saying what is not meant decides nothing
    ("host memory usage % (the MemAvailable way, not free)",
     "1 - node_memory_MemAvailable_bytes / node_memory_MemTotal_bytes"),
    # a network interface by its name; "rx"/"tx"; "which interfaces are up"
    ("rx errors on ens5 over the past 30 minutes", 'sum(increase(node_network_receive_errs_total{device="ens5"}[30m]))'),
    ("which network interfaces are up on node-1", 'node_network_up{node="node-1"} == 1'),
    # "reboot", "overnight": the host's uptime, in the unit asked
    ("did node-2 reboot last night? uptime in days", '(time() - node_boot_time_seconds{node="node-2"}) / 86400'),
    # "as a fraction of all cores" is the busy fraction itself, not each host's share of the fleet's
    ("cpu busy fraction per host as a fraction of all cores",
     '1 - avg without (cpu, mode) (rate(node_cpu_seconds_total{mode="idle"}[5m]))'),
    # two nodes named: both kept, a figure for each
    ("compare the average gpu temperature of node-1 and node-3",
     'avg by (node) (vigil_gpu_temperature_celsius{node=~"node-1|node-3", sensor="gpu"})'),
    ("power draw on node-1 vs node-2", 'sum by (node) (vigil_gpu_power_watts{node=~"node-1|node-2"})'),
    # a value reached at some point of a window: the window's lowest (highest for "above")
    ("how many gpus fell to 0% utilization at some point over the last 12 hours",
     "count(min_over_time(vigil_gpu_utilization_ratio[12h]) == 0)"),
    ("did any gpu ever go above 85 C in the past 6 hours",
     'max_over_time(vigil_gpu_temperature_celsius{sensor="gpu"}[6h]) > 85'),
    ("did any gpu reach 88 C at some point in the last 3 hours",
     'max_over_time(vigil_gpu_temperature_celsius{sensor="gpu"}[3h]) >= 88'),
    # NVLink CRC errors: both kinds, flits and data; one said, that one
    ("nvlink crc errors on node-2 over the past 3 hours",
     'sum(increase(vigil_gpu_nvlink_errors_total{error_type=~"crc_flit|crc_data", node="node-2"}[3h]))'),
    ("crc data errors on nvlink per gpu", 'vigil_gpu_nvlink_errors_total{error_type="crc_data"}'),
    # "by error type" groups by the error's type
    ("nvlink errors per error type in the last 2 hours",
     "sum by (error_type) (increase(vigil_gpu_nvlink_errors_total[2h]))"),
    # a ranked question: an alert's series are all 1, so the figure answers, not the alert
    ("top 3 disks most likely to fail soon", 'topk(3, vigil_failure_risk{kind="disk"})'),
    # "who's running on a node": the users of its jobs
    ("whos on node-1 right now", 'group by (user) (vigil_job_info{node="node-1"})'),
    # a person on series without a person label: kept to that person's jobs, by the labels the series share
    ("how busy is erin's job", '(job:vigil_gpu_utilization:avg and on (job_id) vigil_job_info{user="erin"})'),
    ("how much gpu memory is frank using",
     'sum((vigil_gpu_memory_used_bytes and on (node, gpu) (vigil_gpu_job and on (node, job_id) '
     'vigil_job_info{user="frank"})))'),
    ("which gpus are erin's jobs on", '(vigil_gpu_job and on (job_id) vigil_job_info{user="erin"}) == 1'),
    # ... but the jobs themselves are listed from their own info, which names the person
    ("list erin's jobs", 'vigil_job_info{user="erin"}'),
    ("what jobs is frank running", 'vigil_job_info{user="frank"}'),
    # now against then: the answer less itself at an offset, a record's earlier value read on its raw series
    ("avg gpu utilization per node now compared to 3 hours ago",
     "node:vigil_gpu_utilization:avg - (avg by (node) (vigil_gpu_utilization_ratio offset 3h))"),
    ("gpu 1 on node-2 temperature vs 20 minutes ago",
     'vigil_gpu_temperature_celsius{gpu="1", node="node-2", sensor="gpu"} - '
     '(vigil_gpu_temperature_celsius{gpu="1", node="node-2", sensor="gpu"} offset 20m)'),
    ("how many gpus are below 10% utilization now versus 2 hours ago",
     "(count(vigil_gpu_utilization_ratio < 0.1)) - (count(vigil_gpu_utilization_ratio offset 2h < 0.1))"),
]


def test_these_questions_are_in_no_set():
    assert_in_no_set([q for q, _ in ONE_READING] + ["clock speeds of the node-3 gpus", "which disks will fail soon"])


@pytest.mark.parametrize("question, promql", ONE_READING)
def test_each_kind_is_read_from_its_words(question, promql):
    assert_one_reading(question, promql)


def test_a_clock_with_nothing_saying_which_is_asked_back_between_the_sm_and_the_memory_clock():
    answer = ask("clock speeds of the node-3 gpus")
    assert [r.promql for r in answer.readings] == ['vigil_gpu_clock_hertz{clock="sm", node="node-3"}',
                                                   'vigil_gpu_clock_hertz{clock="memory", node="node-3"}']
    assert "memory clock" in answer.ask_back
    for said in ("SM clock speeds of the node-3 gpus", "memory clock of the node-3 gpus",
                 "seconds the node-3 gpus' clocks were held down by power"):
        assert not ask(said).readings, said


def test_an_unranked_question_of_a_state_only_a_rule_defines_is_still_read_from_the_alert():
    """The ranked question above no longer goes to the alert; an unranked one still does (the rule's
    threshold decides which disks will fail soon)."""
    assert ask("which disks will fail soon").promql == 'ALERTS{alertname="DiskFailureRiskHigh", alertstate="firing"}'


def test_a_lone_label_value_that_names_no_metric_is_still_refused():
    with pytest.raises(Unanswerable):
        ask("what about sms")
