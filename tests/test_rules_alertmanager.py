"""The generated Alertmanager configuration (`rules.alertmanager`, the one `vigil up` runs) in a real
Alertmanager: its inhibit rules mute the right alerts, and only those.

Alert labels are the ones the generated rules produce (checked by the promtool unit tests).
"""

from __future__ import annotations

import shutil
import time

import pytest
import requests

from vigil import rules
from vigil.rules.alert_list import alert_list_markdown

AM = shutil.which("prometheus-alertmanager") or shutil.which("alertmanager")
pytestmark = [pytest.mark.e2e, pytest.mark.skipif(AM is None, reason="Alertmanager is not installed")]


def gpu_alert(name: str, node: str, gpu: str | None = None, severity: str = "critical") -> dict:
    labels = {"alertname": name, "severity": severity, "team": "gpu", "job": "vigil-gpu",
              "instance": f"{node}:9835", "node": node}
    if gpu is not None:
        labels.update(gpu=gpu, uuid=f"GPU-{node}-{gpu}")
    return {"labels": labels, "annotations": {"summary": name}}


def muted(url: str, expected: set[tuple[str, str, str]]) -> set[tuple[str, str, str]]:
    """(alertname, node, gpu) of the inhibited alerts: polled until it equals `expected` or 15 s pass."""
    deadline = time.monotonic() + 15
    while True:
        alerts = requests.get(f"{url}/api/v2/alerts", timeout=5).json()
        result = {(a["labels"]["alertname"], a["labels"].get("node", ""), a["labels"].get("gpu", ""))
                  for a in alerts if a["status"]["inhibitedBy"]}
        if result == expected or time.monotonic() > deadline:
            return result
        time.sleep(0.3)


def test_generated_inhibit_rules_mute_exactly_the_intended_alerts(alertmanager):
    sent = [
        gpu_alert("GpuNodeDown", "node-1"),
        gpu_alert("GpuFallenOffBus", "node-1", "0"),  # muted: its node is down
        gpu_alert("GpuOverheating", "node-2", "1"),
        gpu_alert("GpuTemperatureHigh", "node-2", "1", "warning"),  # muted: same GPU overheats
        gpu_alert("GpuTemperatureHigh", "node-2", "2", "warning"),  # another GPU: not muted
        gpu_alert("GpuFallenOffBus", "node-3", "4"),
        gpu_alert("GpuMissing", "node-3"),  # muted: the lost GPU explains it
        gpu_alert("GpuMissing", "node-4"),  # no lost GPU on node-4: not muted
        gpu_alert("GpuUncorrectableEccErrors", "node-5", "3"),
        gpu_alert("GpuRemapPending", "node-5", "3", "warning"),  # muted by the ECC alert
        gpu_alert("GpuRecoveryActionRequired", "node-5", "3"),  # muted by the ECC alert
        gpu_alert("GpuRecoveryActionRequired", "node-5", "6"),  # other GPU: not muted
        # an idle GPU of a job lags its peers in compute and in memory traffic: one ticket for the GPU
        gpu_alert("GpuUtilizationBelowJobPeers", "node-6", "2", "warning"),
        gpu_alert("GpuMemoryBandwidthBelowJobPeers", "node-6", "2", "warning"),  # muted: same GPU lags
        gpu_alert("GpuMemoryBandwidthBelowJobPeers", "node-6", "3", "warning"),  # starved alone: not muted
    ]
    response = requests.post(f"{alertmanager}/api/v2/alerts", json=sent, timeout=5)
    assert response.ok, response.text
    expected = {
        ("GpuFallenOffBus", "node-1", "0"),
        ("GpuTemperatureHigh", "node-2", "1"),
        ("GpuMissing", "node-3", ""),
        ("GpuRemapPending", "node-5", "3"),
        ("GpuRecoveryActionRequired", "node-5", "3"),
        ("GpuMemoryBandwidthBelowJobPeers", "node-6", "2"),
    }
    assert muted(alertmanager, expected) == expected
    assert len(requests.get(f"{alertmanager}/api/v2/alerts", timeout=5).json()) == len(sent)


def test_a_lost_gpu_silences_that_gpus_ecc_xid_and_thermal_alerts(alertmanager):
    sent = [
        gpu_alert("GpuFallenOffBus", "node-1", "2"),
        gpu_alert("GpuUncorrectableEccErrors", "node-1", "2"),  # muted: the GPU is lost
        gpu_alert("GpuCriticalXid", "node-1", "2"),  # muted
        gpu_alert("GpuTemperatureHigh", "node-1", "2", "warning"),  # muted
        gpu_alert("GpuCriticalXid", "node-1", "3"),  # another GPU of the node: not muted
        gpu_alert("GpuUncorrectableEccErrors", "node-2", "2"),  # same GPU index, other node: not muted
    ]
    assert requests.post(f"{alertmanager}/api/v2/alerts", json=sent, timeout=5).ok
    expected = {("GpuUncorrectableEccErrors", "node-1", "2"), ("GpuCriticalXid", "node-1", "2"),
                ("GpuTemperatureHigh", "node-1", "2")}
    assert muted(alertmanager, expected) == expected


def test_a_node_alert_without_a_node_label_mutes_nothing_that_lacks_one_too(alertmanager):
    """Alertmanager counts a label both alerts lack as equal: the generated inhibit rules require the
    source to carry its `equal` labels, so a mislabelled NodeDown cannot mute the Watchdog or a whole
    service's alerts."""
    no_node = gpu_alert("NodeDown", "x")
    del no_node["labels"]["node"]
    watchdog = {"labels": {"alertname": "Watchdog", "severity": "info", "team": "platform"}, "annotations": {}}
    target_down = {"labels": {"alertname": "TargetDown", "severity": "warning", "team": "platform",
                              "job": "vigil-aiops"}, "annotations": {}}
    sent = [no_node, watchdog, target_down, gpu_alert("NodeDown", "node-7"),
            gpu_alert("GpuCriticalXid", "node-7", "1")]  # muted: its node's NodeDown carries `node`
    assert requests.post(f"{alertmanager}/api/v2/alerts", json=sent, timeout=5).ok
    expected = {("GpuCriticalXid", "node-7", "1")}
    assert muted(alertmanager, expected) == expected


def test_node_down_mutes_what_docs_rules_md_says_and_no_job_alert(alertmanager):
    """docs/rules.md lists, per alert, the alerts that mute it; node down is listed only where the alert
    carries `node`. A real Alertmanager agrees: a job's alerts (job_id, no node) stay active while the
    node under the job is down, a GPU alert of that node is muted."""
    ruleset = rules.load_specs(rules.default_spec_paths())
    table = {line.split("|")[1].strip(" `"): line.split("|")[-2] for line in
             alert_list_markdown(ruleset).splitlines() if line.startswith("| `")}
    job = {"job_id": "4711", "tenant": "llm", "user": "alice", "team": "jobs", "severity": "critical"}
    sent = [gpu_alert("GpuNodeDown", "node-7"),
            gpu_alert("GpuOverheating", "node-7", "2"),
            {"labels": {"alertname": "JobHung", **job}, "annotations": {"summary": "hung"}},
            {"labels": {"alertname": "JobGpusIdle", **job, "severity": "warning"}, "annotations": {"summary": "idle"}}]
    assert requests.post(f"{alertmanager}/api/v2/alerts", json=sent, timeout=5).ok
    # JobHung mutes JobGpusIdle of the same job; node down mutes the GPU alert only
    expected = {("GpuOverheating", "node-7", "2"), ("JobGpusIdle", "", "")}
    assert muted(alertmanager, expected) == expected
    for name in ("GpuOverheating", "JobHung", "JobGpusIdle"):
        listed = "GpuNodeDown (node)" in table[name]
        assert listed == (name == "GpuOverheating"), (name, table[name])
    assert "JobHung (job_id)" in table["JobGpusIdle"]
