"""Alert correlation: parsing alert history, topology groups, mined inhibitions checked by amtool."""

from __future__ import annotations

import json
import random
import re
import subprocess
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from vigil.aiops.correlate import AlertInputError, Firing, firings_from_json, group_firings, mine_inhibitions
from vigil.cli.aiops_risk import suggest_inhibitions

T0 = datetime(2026, 3, 1, tzinfo=timezone.utc)
AMTOOL = Path("/usr/bin/amtool")


def _iso(minutes: float) -> str:
    return (T0 + timedelta(minutes=minutes)).strftime("%Y-%m-%dT%H:%M:%SZ")


def _alert(name: str, start_min: float, end_min: float | None, **labels) -> dict:
    return {
        "status": "firing" if end_min is None else "resolved",
        "labels": {"alertname": name, **labels},
        "startsAt": _iso(start_min),
        "endsAt": "0001-01-01T00:00:00Z" if end_min is None else _iso(end_min),
    }


def _history(seed: int = 0) -> list[dict]:
    """A week of alerts: node outages take their GPUs' alerts with them; a job's NCCL timeouts come
    with its straggler alert; ECC warnings fire on their own; a flaky symptom follows its cause 70 %."""
    rng = random.Random(seed)
    alerts = []
    for outage in range(12):
        node, start = f"n{rng.randint(1, 6)}", outage * 600 + rng.uniform(0, 60)
        alerts.append(_alert("NodeDown", start, start + 20, node=node, severity="critical"))
        for gpu in rng.sample(range(8), rng.randint(1, 4)):
            lag = rng.uniform(0.2, 1.5)
            alerts.append(_alert("GpuLost", start + lag, start + 20, node=node, gpu=str(gpu), severity="critical"))
    for incident in range(8):
        start, job = incident * 700 + 300, f"job-{incident}"
        alerts.append(_alert("JobStraggler", start, start + 30, job_id=job, node="n9", severity="warning"))
        alerts.append(_alert("NcclTimeout", start + 2, start + 25, job_id=job, node="n9", severity="warning"))
    for k in range(10):
        start = k * 500 + 100
        alerts.append(_alert("GpuEccCorrectedHigh", start, start + 60, node="n7", gpu=str(k % 8), severity="warning"))
        if k % 10 < 7:
            alerts.append(_alert("GpuSlow", start + 1, start + 30, node="n7", gpu=str(k % 8), severity="info"))
    alerts.append(_alert("GpuLost", 9000, None, node="n1", gpu="3", severity="critical"))  # alone, still firing
    return alerts


def test_webhook_payload_repeats_merge_into_one_firing_with_its_resolution():
    first = {"version": "4", "status": "firing", "alerts": [_alert("NodeDown", 0, None, node="n1")]}
    second = {"version": "4", "status": "resolved", "alerts": [_alert("NodeDown", 0, 12, node="n1")],
              "notification_reason": 0}
    firings = firings_from_json([first, second, first])
    assert len(firings) == 1
    assert firings[0].end - firings[0].start == 12 * 60
    still = firings_from_json({"alerts": [_alert("GpuLost", 0, None, node="n1", gpu="0")]})
    assert still[0].end is None
    nanos = firings_from_json([{"labels": {"alertname": "X"}, "startsAt": "2026-03-01T00:00:01.123456789Z"}])
    assert nanos[0].start == pytest.approx(T0.timestamp() + 1.123456)


@pytest.mark.parametrize(
    "data,message",
    [
        ([{"labels": {"node": "n1"}, "startsAt": "2026-03-01T00:00:00Z"}], "item 0: needs `labels` with an `alertname`"),
        ([{"alerts": [{"labels": {"alertname": "A"}}]}], "item 0 alert 0: needs `startsAt`"),
        ([{"labels": {"alertname": "A"}, "startsAt": "yesterday"}], "bad time"),
        (["NodeDown"], "item 0: expected an object"),
    ],
)
def test_bad_alerts_are_rejected_with_their_position(data, message):
    with pytest.raises(AlertInputError, match=message):
        firings_from_json(data)


def test_topology_groups_follow_node_gpu_and_job_within_the_time_window():
    firings = firings_from_json(_history())
    groups = group_firings(firings, window_s=300)
    node_groups = [g for g in groups if any(f.alertname == "NodeDown" for f in g.firings)]
    assert len(node_groups) == 12
    for group in node_groups:
        (parent,) = group.parents
        assert parent.alertname == "NodeDown"
        assert {f.label("node") for f in group.firings} == {parent.label("node")}
        assert all(f.alertname == "GpuLost" for f in group.firings if f is not parent)
    job_groups = [g for g in groups if any(f.label("job_id") for f in g.firings)]
    assert len(job_groups) == 8
    assert all(len({f.label("job_id") for f in g.firings}) == 1 and not g.parents for g in job_groups)
    same_gpu = [g for g in groups if {f.alertname for f in g.firings} == {"GpuEccCorrectedHigh", "GpuSlow"}]
    assert len(same_gpu) == 7 and len(groups) == 12 + 8 + 7
    # the lone GpuLost hours later on n1 joins no group
    assert not any(f.start == (T0 + timedelta(minutes=9000)).timestamp() for g in groups for f in g.firings)


def test_gpus_on_different_nodes_or_far_apart_are_not_grouped():
    far = firings_from_json([_alert("NodeDown", 0, 5, node="a"), _alert("GpuLost", 30, 35, node="a", gpu="0"),
                             _alert("GpuLost", 1, 5, node="b", gpu="0"), _alert("GpuLost", 2, 5, node="a", gpu="1")])
    groups = group_firings(far, window_s=300)
    assert len(groups) == 1
    assert {(f.alertname, f.label("node"), f.label("gpu")) for f in groups[0].firings} == {
        ("NodeDown", "a", None), ("GpuLost", "a", "1")}


def test_mining_proposes_cause_inhibits_symptom_and_nothing_unsafe():
    evidence = mine_inhibitions(firings_from_json(_history()), min_support=3, min_confidence=0.95)
    rules = {(e.source, e.target): e for e in evidence}
    node_gpu = rules[("NodeDown", "GpuLost")]
    assert node_gpu.equal == ("node",)
    # every GpuLost but the lone one came with its NodeDown
    assert node_gpu.confidence == pytest.approx(node_gpu.support / node_gpu.target_firings)
    assert node_gpu.target_firings - node_gpu.support == 1
    assert node_gpu.median_lag_s > 0
    straggler = rules[("JobStraggler", "NcclTimeout")]
    assert straggler.equal == ("node", "job_id") and straggler.support == 8
    assert ("NcclTimeout", "JobStraggler") not in rules  # never both ways
    assert ("GpuLost", "NodeDown") not in rules  # a GPU alert never silences its node
    # GpuSlow always comes with GpuEccCorrectedHigh, so the ECC alert may inhibit it ...
    assert rules[("GpuEccCorrectedHigh", "GpuSlow")].equal == ("node", "gpu")
    # ... but ECC warnings without GpuSlow mean GpuSlow must never inhibit them
    assert not any(e.target == "GpuEccCorrectedHigh" for e in evidence)
    assert len(evidence) == 3


def test_min_support_and_min_confidence_are_respected():
    firings = firings_from_json(_history())
    assert not any(e.support < 9 for e in mine_inhibitions(firings, min_support=9))
    strict = mine_inhibitions(firings, min_support=3, min_confidence=1.0)
    assert ("NodeDown", "GpuLost") not in {(e.source, e.target) for e in strict}  # the lone GpuLost
    loose = mine_inhibitions(firings, min_support=3, min_confidence=0.6)
    assert len(loose) >= 3


def _check_config(tmp_path: Path, rules: list) -> subprocess.CompletedProcess:
    config = {
        "route": {"receiver": "oncall", "group_by": ["alertname"]},
        "receivers": [{"name": "oncall", "webhook_configs": [{"url": "http://127.0.0.1:9/hook"}]}],
        "inhibit_rules": rules,
    }
    path = tmp_path / "alertmanager.yml"
    path.write_text(yaml.safe_dump(config))
    return subprocess.run([str(AMTOOL), "check-config", str(path)], capture_output=True, text=True, timeout=60)


@pytest.mark.skipif(not AMTOOL.exists(), reason="amtool (prometheus-alertmanager) is not installed")
def test_cli_output_is_yaml_that_amtool_accepts(tmp_path):
    alerts = tmp_path / "alerts.json"
    alerts.write_text(json.dumps([{"version": "4", "alerts": _history()}]))
    result = CliRunner().invoke(suggest_inhibitions, ["--input", str(alerts), "--min-support", "3"])
    assert result.exit_code == 0, result.output
    assert re.search(r"^# \d +NodeDown +GpuLost +node +\d+ +0\.9\d\d", result.output, re.M), result.output
    assert "# 27 topology group(s)" in result.output
    proposed = yaml.safe_load(result.output)["inhibit_rules"]
    assert {"source_matchers": ['alertname="NodeDown"'], "target_matchers": ['alertname="GpuLost"'],
            "equal": ["node"]} in proposed
    checked = _check_config(tmp_path, proposed)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert f"{len(proposed)} inhibit rules" in checked.stdout
    # the check is real: a malformed matcher is refused
    broken = _check_config(tmp_path, [{"source_matchers": ['alertname="NodeDown'], "target_matchers": ['a="b"']}])
    assert broken.returncode != 0


def test_cli_reports_bad_input_and_bad_flags_cleanly(tmp_path):
    runner = CliRunner()
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    result = runner.invoke(suggest_inhibitions, ["--input", str(bad)])
    assert result.exit_code == 1 and "bad.json" in result.output and "Traceback" not in result.output
    bad.write_text(json.dumps([{"labels": {"node": "x"}, "startsAt": "2026-01-01T00:00:00Z"}]))
    result = runner.invoke(suggest_inhibitions, ["--input", str(bad)])
    assert result.exit_code == 1 and "alertname" in result.output
    result = runner.invoke(suggest_inhibitions, ["--prometheus-url", "http://127.0.0.1:1", "--lookback", "7days"])
    assert result.exit_code == 2 and "not a duration" in result.output
    result = runner.invoke(suggest_inhibitions, [])
    assert result.exit_code == 2 and "exactly one of" in result.output
    result = runner.invoke(suggest_inhibitions, ["--prometheus-url", "http://127.0.0.1:1"])
    assert result.exit_code == 1 and "cannot reach Prometheus" in result.output


@pytest.mark.parametrize("flag", ["--prometheus", "--prometheus-url"])
def test_prometheus_is_spelled_like_vigil_ask_and_the_old_spelling_still_works(flag):
    runner = CliRunner()
    result = runner.invoke(suggest_inhibitions, [flag, "http://127.0.0.1:1", "--lookback", "1h"])
    assert result.exit_code == 1 and "cannot reach Prometheus at http://127.0.0.1:1" in result.output, result.output
    result = runner.invoke(suggest_inhibitions, [flag, "http://127.0.0.1:1", "--input", __file__])
    assert result.exit_code == 2 and "exactly one of --prometheus URL or --input" in result.output
    assert "--prometheus, --prometheus-url URL" in runner.invoke(suggest_inhibitions, ["--help"]).output


def test_firing_helpers():
    f = Firing((("alertname", "A"), ("node", "n")), 10.0, None)
    assert f.alertname == "A" and f.label("gpu") is None and f.active_at(1e12) and not f.active_at(9)
