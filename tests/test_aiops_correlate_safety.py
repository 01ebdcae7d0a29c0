"""`vigil aiops suggest-inhibitions` never proposes a rule that would mute alerts for ever or everywhere:
no always-firing source (the Watchdog), no rule without `equal`, no less severe source muting a more
severe target; the output counts what was left out, by reason."""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta, timezone

import yaml
from click.testing import CliRunner

from vigil.aiops.correlate import firings_from_json, mine
from vigil.cli.aiops_risk import suggest_inhibitions

T0 = datetime(2026, 3, 1, tzinfo=timezone.utc)
SEVERITY = {"critical": 3, "warning": 2, "info": 1}


def _alert(name: str, start_min: float, end_min: float | None, **labels) -> dict:
    return {
        "labels": {"alertname": name, **labels},
        "startsAt": (T0 + timedelta(minutes=start_min)).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "endsAt": "0001-01-01T00:00:00Z" if end_min is None else
                  (T0 + timedelta(minutes=end_min)).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }


def _demo_history() -> list[dict]:
    """Six hours like the demo stack's: the Watchdog and a third-party dead-man's switch fire throughout;
    node outages take their GPUs' alerts with them; every GPU falling off the bus burns the
    availability budget (a cluster-wide SLO warning that starts first); failure-risk warnings; a long
    scheduler queue (cluster-wide) comes before every pending job."""
    alerts = [_alert("Watchdog", 0, None, severity="info"),
              _alert("DeadMansSwitch", 0, None, severity="none")]
    for k in range(4):
        t, node = 10 + 80 * k, f"n{k}"
        alerts.append(_alert("NodeDown", t, t + 20, node=node, severity="critical"))
        alerts += [_alert("GpuLost", t + 1, t + 20, node=node, gpu=str(g), severity="critical") for g in (0, 1)]
        alerts.append(_alert("GpuAvailabilityErrorBudgetBurnSlow", t + 30, t + 70, slo="gpu-availability",
                             severity="warning"))
        alerts.append(_alert("GpuFallenOffBus", t + 31, t + 40, node=f"m{k}", gpu="3", severity="critical"))
        alerts.append(_alert("GpuFailureRiskHigh", t + 50, t + 55, node=f"r{k}", gpu="5", severity="warning"))
        alerts.append(_alert("SchedulerQueueLong", t + 60, t + 75, severity="warning"))
        alerts.append(_alert("JobPending", t + 61, t + 70, job_id=f"job-{k}", severity="warning"))
    alerts.append(_alert("GpuFailureRiskHigh", 359, 360, node="r9", gpu="1", severity="warning"))
    return alerts


def _run(tmp_path, *args):
    path = tmp_path / "alerts.json"
    path.write_text(json.dumps([{"version": "4", "alerts": _demo_history()}]))
    result = CliRunner().invoke(suggest_inhibitions, ["--input", str(path), *args])
    assert result.exit_code == 0, result.output
    return result.output


def test_only_safe_rules_are_proposed_and_the_rest_counted_by_reason(tmp_path):
    output = _run(tmp_path, "--min-support", "1")
    rules = yaml.safe_load(output)["inhibit_rules"]
    # the one real cause -> symptom pair survives
    assert rules == [{"source_matchers": ['alertname="NodeDown"'], "target_matchers": ['alertname="GpuLost"'],
                      "equal": ["node"]}], output
    assert "# always firing, never a source: DeadMansSwitch, Watchdog" in output
    counts = {m[1]: int(m[0]) for m in re.findall(r"^#\s+(\d+) (\w+): ", output, re.M)}
    # each always-firing alert "covers" the 7 other alerts (and the other always-firing one)
    assert counts["always_firing_source"] == 2 * 8, output
    assert counts["lower_severity_source"] >= 1  # the SLO warning before every GpuFallenOffBus
    assert counts["no_equal_labels"] >= 1  # the cluster-wide queue before every pending job
    assert counts["parent_target"] >= 1  # GpuLost starts within the window of its NodeDown
    assert re.search(rf"^# left out {sum(counts.values())} candidate\(s\)", output, re.M), output


def test_no_proposed_rule_mutes_for_ever_everywhere_or_upwards(tmp_path):
    output = _run(tmp_path)  # the default support, 3: every pair here has four co-firings
    assert "Watchdog" not in output.split("inhibit_rules:")[1]
    result = mine(firings_from_json(_demo_history()), min_support=1)
    names = {(e.source, e.target) for e in result.rules}
    assert ("GpuAvailabilityErrorBudgetBurnSlow", "GpuFallenOffBus") not in names
    assert ("SchedulerQueueLong", "JobPending") not in names
    severity = {a["labels"]["alertname"]: a["labels"]["severity"] for a in _demo_history()}
    for rule in result.rules:
        assert rule.equal and rule.source not in result.always_firing
        assert SEVERITY.get(severity[rule.source], 0) >= SEVERITY.get(severity[rule.target], 0)


def test_an_alert_firing_most_of_the_lookback_is_never_a_source():
    history = [_alert("StuckFan", 0, 340, node="n1", severity="critical")]
    history += [_alert("GpuHot", 10 + 60 * k, 20 + 60 * k, node="n1", gpu="0", severity="warning") for k in range(5)]
    result = mine(firings_from_json(history), min_support=3)
    assert result.always_firing == ("StuckFan",) and not result.rules
    assert result.left_out == {"always_firing_source": 1}
    # the same pair over a history where StuckFan fires for less than 90 % of it is proposed
    longer = history + [_alert("Unrelated", 400, 401, node="n2", severity="info")]
    proposed = mine(firings_from_json(longer), min_support=3).rules
    assert [(e.source, e.target, e.equal) for e in proposed] == [("StuckFan", "GpuHot", ("node",))]
