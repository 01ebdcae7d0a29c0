"""`vigil ask` on the kinds of question the third and fourth outside splits found wanting (issue 33, third
round): an order asked for ("biggest first"), things named in the plural ("on the node-2 GPUs"), "any GPUs
with ...", a unit asked for ("in days", "in GB", "kWh"), host CPU, memory and uptime, label values said in
several words ("SW power cap"), "held down" (throttled, not down), "per job" with nothing saying which job
(asked back), things listed or counted through another thing ("which nodes does job N run on", "what
fraction of all GPUs run a job"). Every question here is in no set (`test_these_questions_are_in_no_set`)."""

from __future__ import annotations


import pytest

from ask_support import assert_in_no_set, assert_one_reading
from vigil.aiops.ask.answer import ask

ONE_READING = [
    # an order asked for: every series in that order, none aggregated away
    ("node-3 gpu temperatures, hottest first", 'sort_desc(vigil_gpu_temperature_celsius{node="node-3", sensor="gpu"})'),
    ("GPU power draw sorted from lowest to highest", "sort(vigil_gpu_power_watts)"),
    ("memory used per node in descending order", "sort_desc(sum by (node) (vigil_gpu_memory_used_bytes))"),
    # the things named in the plural: one figure each, unless the question aggregates
    ("nvlink errors/sec of the node-1 gpus", 'rate(vigil_gpu_nvlink_errors_total{node="node-1"}[5m])'),
    ("how many XID errors did the node-3 gpus log in the last 2 hours",
     'sum(increase(vigil_gpu_xid_errors_total{node="node-3"}[2h]))'),
    # "any GPUs with ...": the ones that have it
    ("any GPUs with correctable ECC errors in the past 6 hours",
     'increase(vigil_gpu_ecc_errors_total{counter_type="aggregate", error_type="corrected"}[6h]) > 0'),
    ("any smart checks failing on node-2?", 'vigil_disk_smart_healthy{node="node-2"} == 0'),
    # a counter split finer than the thing asked for adds up per thing
    ("XID errors of each GPU over the last 3 hours", "sum by (node, gpu) (increase(vigil_gpu_xid_errors_total[3h]))"),
    # a unit asked for
    ("how long has node-2 been up, in hours", '(time() - node_boot_time_seconds{node="node-2"}) / 3600'),
    ("how much GPU memory is in use on node-1, in GiB", '(sum(vigil_gpu_memory_used_bytes{node="node-1"})) / 1073741824'),
    ("energy the fleet's GPUs used in the last 6 hours in kWh",
     "(sum(increase(vigil_gpu_energy_joules_total[6h]))) / 3600000"),
    # the host's CPU, memory and uptime
    ("which server has the busiest cpu", 'topk(1, 1 - avg without (cpu, mode) (rate(node_cpu_seconds_total{mode="idle"}[5m])))'),
    ("ram usage percentage of node-3",
     '1 - node_memory_MemAvailable_bytes{node="node-3"} / node_memory_MemTotal_bytes{node="node-3"}'),
    ("percentage of memory still available on each host", "node_memory_MemAvailable_bytes / node_memory_MemTotal_bytes"),
    ("gpu memory usage percentage of each node",
     "sum by (node) (vigil_gpu_memory_used_bytes) / sum by (node) (vigil_gpu_memory_total_bytes)"),
    ("uptime of node-1 in days", '(time() - node_boot_time_seconds{node="node-1"}) / 86400'),
    # label values said in several words; "held down" is throttled, not down
    ("GPUs with the hardware power brake clock event active",
     'vigil_gpu_clock_event_active{reason="hw_power_brake"} == 1'),
    ("seconds of thermal throttling per GPU in the last 2 hours",
     'increase(vigil_gpu_clock_event_seconds_total{reason="thermal"}[2h])'),
    ("which GPUs are in a software thermal slowdown right now",
     'vigil_gpu_clock_event_active{reason="sw_thermal"} == 1'),
    ("lifetime double bit ECC errors on node-2",
     'vigil_gpu_ecc_errors_total{counter_type="aggregate", error_type="uncorrected", node="node-2"}'),
    # a comparison in percent of a limit reads the ratio
    ("GPUs drawing over 80 % of their power cap", "vigil_gpu_power_watts / vigil_gpu_power_limit_watts > 0.8"),
    # an XID given by its code and described in words
    ("which GPUs hit XID 48 (double bit ECC error) today?", 'increase(vigil_gpu_xid_errors_total{xid="48"}[1d]) > 0'),
    # a component's targets
    ("are the node health exporter's scrape targets up?", 'up{job="vigil-node-health"}'),
    # things listed or counted through another thing
    ("which nodes is training job 57433900 running on?", 'group by (node) (vigil_gpu_job{job_id="57433900"})'),
    ("what fraction of the GPUs are allocated to jobs?",
     "count(count by (node, gpu) (vigil_gpu_job)) / count(vigil_gpu_up)"),
    ("how many unique training jobs hold GPUs right now?", "count(count by (job_id) (vigil_gpu_job))"),
    ("how many training jobs are using at least one GPU?", "count(count by (job_id) (vigil_gpu_job))"),
    # an aggregate the record does not hold is taken on the raw series, through the job's GPUs
    ("lowest GPU utilization of each training job",
     "min by (job_id) (vigil_gpu_utilization_ratio * on (node, gpu) group_left (job_id) vigil_gpu_job)"),
    # things the related series does not list
    ("how many GPUs on node-3 have no job on them", 'count(group by (node, gpu) (vigil_gpu_up{node="node-3"}) '
     'unless on (node, gpu) vigil_gpu_job)'),
    ("how many nodes don't run any training job", "count(group by (node) (vigil_gpu_up) unless on (node) vigil_gpu_job)"),
    # two values of one label side by side: a figure per value
    ("corrected versus uncorrected ECC errors on node-2 in the last day",
     'sum by (error_type) (increase(vigil_gpu_ecc_errors_total{counter_type="aggregate", node="node-2"}[1d]))'),
    # "which N things": the N first
    ("which 2 GPUs draw the most power", "topk(2, vigil_gpu_power_watts)"),
    # how long ago a recorded time was
    ("how many seconds ago did node-1's node health exporter send its last heartbeat",
     'time() - vigil_node_heartbeat_timestamp_seconds{node="node-1"}'),
    # "each prometheus job" is the scrape job, not Prometheus's own target
    ("how many targets does every prometheus job scrape", "count by (job) (up)"),
    # a part the filters pick of the whole fleet's amount
    ("what share of the fleet's GPU power draw comes from node-3?",
     'sum(vigil_gpu_power_watts{node="node-3"}) / sum(vigil_gpu_power_watts)'),
    # power left before the limit
    ("watts of power headroom left on each GPU of node-1",
     'vigil_gpu_power_limit_watts{node="node-1"} - vigil_gpu_power_watts{node="node-1"}'),
    # "how many of X's things pass" a 0/1 check: those at 1
    ("how many of node-3's disks pass their SMART health check?", 'count(vigil_disk_smart_healthy{node="node-3"} == 1)'),
    # "how many days/hours" is the unit of the answer; a slip one letter from a known word's form is mended
    ("how many hours has each disk on node-2 been powerd on",
     '(vigil_disk_power_on_seconds{node="node-2"}) / 3600'),
    # "which <thing> takes the longest": the first one
    ("which prometheus rule group took the longest in its last evaluation?",
     "topk(1, prometheus_rule_group_last_duration_seconds)"),
    ("number of expired silences in alertmanager", 'alertmanager_silences{state="expired"}'),
    # two series in one answer: a measure from the lexicon
    ("how much does node-2's GPU utilization deviate from the learned baseline?",
     'vigil_gpu_utilization_ratio{node="node-2"} - on (node, gpu) group_left () '
     'vigil_baseline_expected{metric="vigil_gpu_utilization_ratio", node="node-2"}'),
    ("alertmanager notification failure ratio by integration",
     "sum by (integration) (rate(alertmanager_notifications_failed_total[5m])) / "
     "sum by (integration) (rate(alertmanager_notifications_total[5m]))"),
    # per user / per tenant on per-GPU series: the job's owner, through the job's info
    ("GPU power draw per tenant", "sum by (tenant) (vigil_gpu_power_watts * on (node, gpu) group_left (tenant) "
     "(vigil_gpu_job * on (node, job_id) group_left (tenant) vigil_job_info))"),
    ("how many GPUs is each user holding", "count by (user) (vigil_gpu_up * on (node, gpu) group_left (user) "
     "(vigil_gpu_job * on (node, job_id) group_left (user) vigil_job_info))"),
    # "held by any job" is a relation, not a grouping
    ("how many GPUs on node-1 are not held by any job?",
     'count(group by (node, gpu) (vigil_gpu_up{node="node-1"}) unless on (node, gpu) vigil_gpu_job)'),
    # a percentage of a 0-1 figure; processes no job claims
    ("disks with a failure risk above 2%", 'vigil_failure_risk{kind="disk"} > 0.02'),
    ("how many GPU processes on node-2 does no job claim?", 'sum(vigil_gpu_processes{kind="external", node="node-2"})'),
    ("rule groups by their last evaluation's duration, slowest first",
     "sort_desc(prometheus_rule_group_last_duration_seconds)"),
    # users of training jobs are things to count and list
    ("how many different users are running training jobs right now?", "count(count by (user) (vigil_job_info))"),
    ("who owns training job 57433900?", 'group by (user) (vigil_job_info{job_id="57433900"})'),
    ("how many of the prometheus targets are up?", "count(up == 1)"),
    # "averaged over" a window is over time, not across series
    ("memory used of each GPU on node-2 averaged over the past 20 minutes",
     'avg_over_time(vigil_gpu_memory_used_bytes{node="node-2"}[20m])'),
    ("how long ago did node-3's exporter finish its last collection, in seconds?",
     'time() - vigil_exporter_last_collection_timestamp_seconds{node="node-3"}'),
    # "# of", "at 0 %", kilowatts, a plain ratio on one node's drives, the host's memory in use
    ("# of gpus on node-2", 'count(vigil_gpu_up{node="node-2"})'),
    ("how many GPUs on node-1 sit at 100% utilization?", 'count(vigil_gpu_utilization_ratio{node="node-1"} == 1)'),
    ("power of the node-3 GPUs together in kilowatts", '(sum(vigil_gpu_power_watts{node="node-3"})) / 1000'),
    ("nvme endurance used (percentage) of node-2's drives", 'vigil_disk_nvme_percentage_used_ratio{node="node-2"}'),
    ("memory usage percentage of the host system", "1 - node_memory_MemAvailable_bytes / node_memory_MemTotal_bytes"),
    ("alertmanager delivery failures per integration over the past 2 hours",
     "sum by (integration) (increase(alertmanager_notifications_failed_total[2h]))"),
    ("GPUs on node-2 held back by the hardware slowdown", 'vigil_gpu_clock_event_active{node="node-2", reason="hw_slowdown"} == 1'),
    # the root filesystem, how full; the failure predictor's words
    ("how full is the root partition of node-1?",
     '1 - node_filesystem_avail_bytes{mountpoint="/", node="node-1"} / node_filesystem_size_bytes{mountpoint="/", '
     'node="node-1"}'),
    ("which gpu is most likely to die according to the failure predictor", 'topk(1, vigil_failure_risk{kind="gpu"})'),
    # "busy" is the GPU's utilization; "busy tensor cores" their own pipe
    ("how busy is node-3 right now", 'vigil_gpu_utilization_ratio{node="node-3"}'),
    ("how busy are the tensor cores of node-2", 'vigil_gpu_tensor_pipe_active_ratio{node="node-2"}'),
    ("how many GPUs on node-1 are idle (0% util)?", 'count(vigil_gpu_utilization_ratio{node="node-1"} == 0)'),
    # eleventh batch's kinds
    ("total energy the node-1 GPUs burned in the last 6 hours, in kWh",
     '(sum(increase(vigil_gpu_energy_joules_total{node="node-1"}[6h]))) / 3600000'),
    ("warmest GPU reading per node", 'max by (node) (vigil_gpu_temperature_celsius{sensor="gpu"})'),
    ("how many open incidents per priority?", "count by (priority) (vigil_incident_open)"),
    ("number of GPUs per driver version", "count by (driver) (vigil_gpu_info)"),
    ("any zombie processes on node-2's GPUs?", 'vigil_gpu_processes{kind="zombie", node="node-2"} > 0'),
    ("seconds each GPU on node-3 was thermally throttled over the past 2 hours",
     'increase(vigil_gpu_clock_event_seconds_total{node="node-3", reason="thermal"}[2h])'),
    # dashboard talk names no measurement
    ("grafana stat panel showing the average gpu temperature of the cluster",
     'avg(vigil_gpu_temperature_celsius{sensor="gpu"})'),
]


def test_these_questions_are_in_no_set():
    assert_in_no_set([q for q, _ in ONE_READING] + ["gpu temperature per job", "power draw for every job",
                                          "mem utilization of the gpus on node-3",
                                          "tensor core activity of each GPU on node-1, want to see if the matmuls run",
                                          "Power draw of the node-2 GPUs, highest first. Trying to find the one that "
                                          "trips the breaker.",
                                          "Our jobs keep getting killed overnight. Which nodes have the least free GPU "
                                          "memory?", "for the capacity review: energy used by the GPUs of each node over "
                                          "the last 6 hours in kWh", "pondering a new fan curve - what was the hottest "
                                          "each node's GPUs got over the last 3 hours?"])


@pytest.mark.parametrize("question, promql", ONE_READING)
def test_each_kind_is_read_from_its_words(question, promql):
    assert_one_reading(question, promql)


def test_a_unit_asked_for_is_said_in_the_explanation():
    assert "in days: seconds / 86400" in ask("uptime of node-1 in days").explanation


@pytest.mark.parametrize("question", ["gpu temperature per job", "power draw for every job"])
def test_per_job_without_saying_which_job_is_answered_per_training_job_and_asked_back(question):
    answer = ask(question)
    assert "group_left (job_id) vigil_gpu_job" in answer.promql
    assert [r.meaning for r in answer.readings] == ["training jobs (job_id)",
                                                    "Prometheus scrape jobs (the job label of targets)"]
    assert answer.readings[1].promql.startswith(("avg by (job) (", "sum by (job) ("))
    assert "which do you mean" in answer.ask_back and "per scrape job" in answer.ask_back


@pytest.mark.parametrize("question", ["gpu temperature per training job", "gpu temperature of job 57433900",
                                      "scrape duration per job"])
def test_per_job_said_plainly_is_not_asked_back(question):
    assert not ask(question).readings


def test_memory_utilization_is_asked_back_between_its_busy_time_and_its_fill():
    answer = ask("mem utilization of the gpus on node-3")
    assert answer.promql == 'vigil_gpu_memory_utilization_ratio{node="node-3"}'
    assert [r.promql for r in answer.readings] == [
        answer.promql, 'vigil_gpu_memory_used_bytes{node="node-3"} / vigil_gpu_memory_total_bytes{node="node-3"}']
    assert "memory used fraction" in answer.ask_back
    assert not ask("memory bandwidth utilization of the gpus on node-3").readings


def test_a_question_after_a_sentence_of_context_is_answered_from_its_last_sentence():
    answer = ask("The SMS provider had an outage this morning. How many SMS deliveries failed over the last 12 hours?")
    assert answer.promql == 'sum(increase(vigil_notifier_deliveries_total{channel="sms", result="failed"}[12h]))'


@pytest.mark.parametrize("question, promql", [
    ("tensor core activity of each GPU on node-1, want to see if the matmuls run",
     'vigil_gpu_tensor_pipe_active_ratio{node="node-1"}'),
    ("Power draw of the node-2 GPUs, highest first. Trying to find the one that trips the breaker.",
     'sort_desc(vigil_gpu_power_watts{node="node-2"})'),
    ("Our jobs keep getting killed overnight. Which nodes have the least free GPU memory?",
     "sort(sum by (node) (vigil_gpu_memory_free_bytes))"),
    ("for the capacity review: energy used by the GPUs of each node over the last 6 hours in kWh",
     "(sum by (node) (increase(vigil_gpu_energy_joules_total[6h]))) / 3600000"),
    ("pondering a new fan curve - what was the hottest each node's GPUs got over the last 3 hours?",
     'max by (node) (max_over_time(vigil_gpu_temperature_celsius{sensor="gpu"}[3h]))'),
])
def test_why_a_question_is_asked_is_not_read_as_what_it_measures(question, promql):
    assert ask(question).promql == promql
