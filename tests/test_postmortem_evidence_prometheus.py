"""The postmortem's metric evidence from a real Prometheus (the Debian 2.42 binary) on backfilled data:
the first sign of the fault from the alert's own loaded expression, the jobs `vigil_gpu_job` puts on the
GPU, the threshold of a threshold alert and the AIOps baseline band of a baseline alert."""

from __future__ import annotations

import subprocess
import time

import numpy as np
import pytest
import yaml

from vigil import rules
from vigil.aiops.history.openmetrics import write_openmetrics
from vigil.common.prometheus_api import PrometheusClient
from vigil.notifier.postmortem.evidence import gather
from vigil.common.times import rfc3339
from test_aiops_history_prometheus import wait_http
from test_notifier_support import free_port

pytestmark = pytest.mark.e2e
STEP = 15.0
BASELINE_ALERT = "GpuLoadOutsideBaseline"  # the shipped rule: vigil_baseline_lower/upper{metric=...}
HOT_EXPR = 'vigil_gpu_temperature_celsius{sensor="gpu"} >= 90'


@pytest.fixture(scope="module")
def prometheus(tmp_path_factory):
    """(client, fault time): 40 minutes of samples every 15 s, up to a minute ago; at the fault time GPU
    0 of node-1 drops out of its load band and GPU 1 of node-1 overheats; job-42 holds both."""
    work = tmp_path_factory.mktemp("pm-prom")
    end = time.time() - 60
    end -= end % STEP
    t = end - STEP * np.arange(160)[::-1]
    fault = float(t[100])
    after = t >= fault
    gpu0, gpu1 = {"node": "node-1", "gpu": "0"}, {"node": "node-1", "gpu": "1"}
    band = {"metric": "vigil_gpu_utilization_ratio"}
    series = [
        ("vigil_gpu_utilization_ratio", gpu0, t, np.where(after, 0.05, 0.8)),
        ("vigil_gpu_utilization_ratio", {"node": "n2", "gpu": "0"}, t, np.full(t.size, 0.02)),  # not the incident's
        ("vigil_baseline_lower", {**band, **gpu0}, t, np.full(t.size, 0.5)),
        ("vigil_baseline_upper", {**band, **gpu0}, t, np.full(t.size, 0.95)),
        ("vigil_gpu_temperature_celsius", {**gpu1, "sensor": "gpu"}, t, np.where(after, 95.0, 60.0)),
        ("vigil_gpu_job", {**gpu0, "uuid": "GPU-a", "job_id": "job-42"}, t, np.ones(t.size)),
        ("vigil_gpu_job", {**gpu1, "uuid": "GPU-b", "job_id": "job-42"}, t, np.ones(t.size)),
        ("vigil_gpu_job", {"node": "n2", "gpu": "0", "uuid": "GPU-c", "job_id": "job-other"}, t, np.ones(t.size)),
    ]
    # a disk already bad 7 hours ago: further back than the first sign is looked for
    old = end - 300.0 * np.arange(85)[::-1]
    series.append(("vigil_disk_bad", {"node": "n3"}, old, np.ones(old.size)))
    write_openmetrics(work / "history.om", series)
    subprocess.run(["promtool", "tsdb", "create-blocks-from", "openmetrics", str(work / "history.om"), str(work / "tsdb")],
                   check=True, capture_output=True)
    ruleset = rules.load_specs(rules.default_spec_paths())
    shipped = next(a for a in ruleset.alerts if a.name == BASELINE_ALERT)
    # the shipped alert reads recorded series (each side of the band): their rules are loaded too, but
    # they have no history before now, so the evidence must look through them to the raw series
    read = [{"record": r.name, "expr": r.expr} for g in ruleset.groups for r in g.records if r.name in shipped.expr]
    assert read, "the shipped baseline alert reads no recorded series any more: this fixture can be simpler"
    (work / "rules.yml").write_text(yaml.safe_dump({"groups": [{"name": "pm", "interval": "1h", "rules": [
        *read, {"alert": BASELINE_ALERT, "expr": shipped.expr}, {"alert": "GpuHot", "expr": HOT_EXPR},
        {"alert": "DiskBad", "expr": "vigil_disk_bad == 1"}]}]}))
    (work / "prometheus.yml").write_text(yaml.safe_dump({"rule_files": [str(work / "rules.yml")]}))
    port = free_port()
    proc = subprocess.Popen(["/usr/bin/prometheus", f"--config.file={work / 'prometheus.yml'}",
                             f"--storage.tsdb.path={work / 'tsdb'}", f"--web.listen-address=127.0.0.1:{port}"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_http(f"http://127.0.0.1:{port}/-/ready")
        yield PrometheusClient(f"http://127.0.0.1:{port}"), fault
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def incident(fault: float, *alerts: tuple[str, dict]) -> dict:
    opened = rfc3339(fault + 60)
    return {"id": 1, "opened_at": opened, "resolved_at": None, "labels": {},
            "alerts": [{"labels": {"alertname": name, **labels}, "startsAt": opened} for name, labels in alerts]}


def test_first_sign_jobs_threshold_and_band(prometheus):
    client, fault = prometheus
    found = gather(client, incident(fault, (BASELINE_ALERT, {"node": "node-1", "gpu": "0"}),
                                    ("GpuHot", {"node": "node-1", "gpu": "1"})), now=fault + 600)
    assert found.problems == []
    assert abs(found.first_sign_at - fault) <= 5, (found.first_sign_at, fault)  # both faults start then
    assert found.first_sign_how.startswith("first sample of ")
    assert found.jobs == ["job-42"]  # not n2's job
    charts = {chart.title.split(":")[0]: chart for chart in found.charts}
    hot, load = charts["GpuHot"], charts[BASELINE_ALERT]
    assert hot.threshold == (">=", 90.0) and hot.band is None
    assert [line.label for line in hot.lines] == ["node=node-1, gpu=1"]
    assert load.query == "vigil_gpu_utilization_ratio" and load.threshold is None
    assert [line.label for line in load.lines] == ["node=node-1, gpu=0"]  # n2's GPU is not drawn
    lower, upper = load.band
    assert {v for _, v in lower} == {0.5} and {v for _, v in upper} == {0.95}


def test_no_rule_of_that_name_leaves_the_first_sign_unknown(prometheus):
    client, fault = prometheus
    found = gather(client, incident(fault, ("RenamedSince", {"node": "node-1", "gpu": "1"})), now=fault + 600)
    assert found.first_sign_at is None and found.charts == []
    assert found.first_sign_how == "unknown: Prometheus has no rule for RenamedSince"
    assert found.jobs == ["job-42"]


def test_a_condition_older_than_the_search_is_not_called_its_first_sign(prometheus):
    client, fault = prometheus
    found = gather(client, incident(fault, ("DiskBad", {"node": "n3"})), now=fault + 600)
    assert found.first_sign_at is None
    assert found.first_sign_how == "unknown: DiskBad's condition already held at the earliest time looked at, 6 h before the first alert"
