"""`vigil ask` on the kinds of question the fourteenth and fifteenth outside splits found wanting (issue 33,
2026-12-07): the on-call engineer's words (pages stuck in the outbox, the ack SLA, webhook notifications,
the watchdog's heartbeat, pages per on-call person), a job's GPUs by the job's id, a job's straggler, "the 3
GPUs with the highest ...", values listed with slashes, two clocks side by side, the host's load per core,
"who's running workloads on"; then the sixteenth and seventeenth splits' (a share of a window's time, "since
the last reset", idle GPUs asked back). Every question here is in no set (`test_these_questions_are_in_no_set`)."""

from __future__ import annotations

import pytest

from ask_support import assert_in_no_set, assert_one_reading
from vigil.aiops.ask.answer import ask
from vigil.aiops.ask.retrieve import Unanswerable

ONE_READING = [
    # the on-call engineer's words
    ("how many deliveries are stuck in the outbox", 'sum(vigil_notifier_outbox_deliveries{state="pending"})'),
    ("ack SLA breaches for P2 incidents in the last 2 hours",
     'sum(increase(vigil_notifier_sla_breaches_total{priority="P2", target="ack"}[2h]))'),
    ("webhook notifications alertmanager sent in the last 2 hours",
     'sum(increase(alertmanager_notifications_total{integration="webhook"}[2h]))'),
    # an alert's name said ("watchdog") filters alerts only, not another series that names it otherwise
    ("seconds since the watchdog heartbeat was last seen", "time() - vigil_notifier_heartbeat_last_seen_timestamp_seconds"),
    # "each on-call person": the word after a qualifier groups
    ("pages each on-call person got", "sum by (person) (vigil_oncall_pages)"),
    ("which PID uses the most GPU memory on node-1", 'topk(1, vigil_gpu_process_memory_bytes{node="node-1"})'),
    # a job's id on per-GPU series: the GPUs the job holds
    ("tensor pipe activity of job 57433900",
     '(vigil_gpu_tensor_pipe_active_ratio and on (node, gpu) vigil_gpu_job{job_id="57433900"})'),
    # a straggler is the least busy GPU; "which GPU" of a job reads the per-GPU record of the job
    ("who is the straggler in job 57433900", 'bottomk(1, job_gpu:vigil_gpu_utilization:ratio{job_id="57433900"})'),
    ("any stragglers on node-2?", 'bottomk(1, vigil_gpu_utilization_ratio{node="node-2"})'),
    # "the N things with the highest ...": ranked, per thing
    ("the 3 GPUs with the highest temperature", 'topk(3, vigil_gpu_temperature_celsius{sensor="gpu"})'),
    ("the 2 nodes with the lowest power draw", "bottomk(2, sum by (node) (vigil_gpu_power_watts))"),
    # values listed with slashes, or side by side, ask for a figure per value (no default value kept)
    ("nvlink errors by type (replay/recovery) on node-2",
     'sum by (error_type) (vigil_gpu_nvlink_errors_total{node="node-2"})'),
    ("sm and memory clock of gpu 1 on node-3", 'avg by (clock) (vigil_gpu_clock_hertz{gpu="1", node="node-3"})'),
    # the host's load per CPU core ("load average" is a name, not an average)
    ("1 minute load average per cpu core",
     'node_load1 / on (node, instance) group_left () count without (cpu, mode) (node_cpu_seconds_total{mode="idle"})'),
    ("who's running workloads on node-3", 'group by (user) (vigil_job_info{node="node-3"})'),
    # the sixteenth and seventeenth batches': a unit mended from a slip, "since the last reset" (the
    # volatile count), "pulling" power, "util" of the host's CPU, "notifs", a share of a window's time,
    # energy totals in kWh of GPUs named in the plural, things listed without a relation
    ("power draw of node-3's gpus in kilowats", '(vigil_gpu_power_watts{node="node-3"}) / 1000'),
    ("uncorrected ecc errors on node-1 since the last reset",
     'vigil_gpu_ecc_errors_total{counter_type="volatile", error_type="uncorrected", node="node-1"}'),
    ("how many kilowatts are the node-2 GPUs pulling", '(sum(vigil_gpu_power_watts{node="node-2"})) / 1000'),
    ("cpu util of each host", '1 - avg without (cpu, mode) (rate(node_cpu_seconds_total{mode="idle"}[5m]))'),
    ("what fraction of the last hour was each gpu on node-3 thermally throttled",
     'rate(vigil_gpu_clock_event_seconds_total{node="node-3", reason="thermal"}[1h])'),
    ("what fraction of the last 2 hours was gpu 3 on node-1 up",  # a 0/1 gauge: its average, as before
     'avg_over_time(vigil_gpu_up{gpu="3", node="node-1"}[2h])'),
    ("is alertmanager failing to deliver anything? failed notifs per integration last 2h",
     "sum by (integration) (increase(alertmanager_notifications_failed_total[2h]))"),
    ("kwh used by the node-3 gpus over the last 6 hours",
     '(sum(increase(vigil_gpu_energy_joules_total{node="node-3"}[6h]))) / 3600000'),
    ("list the gpus on node-1 that have no job",
     'group by (node, gpu) (vigil_gpu_up{node="node-1"}) unless on (node, gpu) vigil_gpu_job'),
]


def test_these_questions_are_in_no_set():
    assert_in_no_set([q for q, _ in ONE_READING] + ["ack incident 42", "which cards are idle",
                                                   "how many idle gpus are there on node-2",
                                                   "how many GPUs on node-2 sit idle at 0% util?"])


@pytest.mark.parametrize("question, promql", ONE_READING)
def test_each_kind_is_read_from_its_words(question, promql):
    assert_one_reading(question, promql)


@pytest.mark.parametrize("question, no_job", [
    ("which cards are idle", "group by (node, gpu) (vigil_gpu_up) unless on (node, gpu) vigil_gpu_job"),
    ("how many idle gpus are there on node-2",
     'count(group by (node, gpu) (vigil_gpu_up{node="node-2"}) unless on (node, gpu) vigil_gpu_job)'),
])
def test_idle_gpus_are_asked_back_between_no_job_and_not_computing(question, no_job):
    """Three helpers marked "idle GPUs" ambiguous on their own: held by no job, or not computing."""
    answer = ask(question)
    assert answer.promql == no_job
    assert [r.promql for r in answer.readings][0] == no_job and "< 0.01" in answer.readings[1].promql
    assert "below 1 percent utilization" in answer.ask_back


def test_idle_said_with_a_measurement_is_not_asked_back():
    assert not ask("how many GPUs on node-2 sit idle at 0% util?").readings


def test_acknowledging_is_still_refused_as_an_action():
    with pytest.raises(Unanswerable, match="asks to change something"):
        ask("ack incident 42")
