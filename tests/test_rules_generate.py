"""Generation: golden files, the `for` cap, PromQL of the compact kinds, Alertmanager inhibit rules."""

from __future__ import annotations

import re
import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from vigil import rules
from vigil.common.durations import format_duration, parse_prometheus_duration as parse_duration
from vigil.rules.promql import format_number
from vigil.cli import main

from golden_support import check_golden

DOCS = Path(__file__).parent.parent / "docs"


@pytest.mark.parametrize("max_for, suffix", [(None, ""), ("5s", "-max-for-5s")])
def test_generated_files_match_the_golden_files(tmp_path, max_for, suffix):
    args = ["rules", "generate", "-o", str(tmp_path)] + (["--max-for", max_for] if max_for else [])
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    check_golden(f"rules/vigil-rules{suffix}.yml", (tmp_path / rules.RULE_FILE_NAME).read_text(encoding="utf-8"))
    # the cap does not change inhibit rules: one golden file for both
    check_golden("rules/alertmanager-inhibit-rules.yml", (tmp_path / rules.INHIBIT_FILE_NAME).read_text(encoding="utf-8"))


def test_generate_without_output_dir_prints_the_rule_file():
    result = CliRunner().invoke(main, ["rules", "generate"])
    assert result.exit_code == 0
    expected = rules.dump_yaml(rules.prometheus_rule_file(rules.load_specs(rules.default_spec_paths())))
    assert result.output == expected


def test_max_for_caps_for_and_keep_firing_for_only_where_longer():
    ruleset = rules.load_specs(rules.default_spec_paths())
    capped = {r["alert"]: r for g in rules.prometheus_rule_file(ruleset, max_for_seconds=90)["groups"]
              for r in g["rules"] if "alert" in r}  # recording rules have no 'for'
    assert capped["GpuTemperatureHigh"]["for"] == "1m30s"  # 10m capped
    assert capped["GpuOverheating"]["for"] == "1m"  # already shorter
    assert capped["GpuOverheating"]["keep_firing_for"] == "1m30s"  # 2m capped
    assert "for" not in capped["GpuUncorrectableEccErrors"]  # fires at once, stays so
    zero = rules.prometheus_rule_file(ruleset, max_for_seconds=0)
    absent = {a.name for a in ruleset.alerts if a.kind == "absent"}
    assert all("for" not in r and "keep_firing_for" not in r for g in zero["groups"] for r in g["rules"]
               if r.get("alert") not in absent)
    # an absent target is judged after a minute even so: a fresh Prometheus scrapes a few seconds after
    # it first evaluates, and a target not scraped yet is not absent
    assert {r["for"] for g in zero["groups"] for r in g["rules"] if r.get("alert") in absent} == {"1m"}


def test_max_for_also_drops_the_groups_own_intervals():
    """A quick demo caps `for`; a 1-minute group would still hold its alerts back for up to a minute."""
    ruleset = rules.load_specs(rules.default_spec_paths())
    as_written = {g["name"]: g.get("interval") for g in rules.prometheus_rule_file(ruleset)["groups"]}
    assert as_written["vigil-baselines"] == "1m" and as_written["vigil-gpu"] is None
    capped = rules.prometheus_rule_file(ruleset, max_for_seconds=5)["groups"]
    assert [g["name"] for g in capped] == list(as_written) and not any("interval" in g for g in capped)


def test_first_rule_set_contract():
    """Alert names and severities the stack drill waits for."""
    ruleset = rules.load_specs(rules.default_spec_paths())
    severities = {a.name: a.severity for a in ruleset.alerts}
    assert severities.items() >= {
        "GpuFallenOffBus": "critical", "GpuNvmlStalled": "critical", "GpuUncorrectableEccErrors": "critical", "GpuOverheating": "critical",
        "GpuTemperatureHigh": "warning", "GpuNodeDown": "critical", "GpuCriticalXid": "critical",
        "GpuXidWarning": "warning", "GpuApplicationXidSpike": "warning", "GpuRowRemapFailure": "critical",
        "GpuRemapPending": "warning", "GpuRecoveryActionRequired": "critical", "GpuMissing": "critical",
        "GpuExporterAbsent": "warning", "GpuLoadOutsideBaseline": "warning",
    }.items()
    assert [p.name for p in rules.default_spec_paths()] == [
        "aiops.yaml", "baselines.yaml", "baselines_upper.yaml", "gpu.yaml", "gpu_errors.yaml", "gpu_links.yaml",
        "gpu_load.yaml", "gpu_lost.yaml", "gpu_memory.yaml", "gpu_nvlink.yaml", "gpu_nvlink_even.yaml", "gpu_pcie.yaml",
        "gpu_power.yaml", "gpu_records.yaml", "gpu_records_memory.yaml", "gpu_records_node.yaml",
        "gpu_temperature.yaml", "gpu_xid_recurring.yaml", "jobs.yaml", "node.yaml", "service.yaml", "slo.yaml"]
    for alert in ruleset.alerts:
        anchor = alert.runbook_url.split("#")[1]
        assert alert.runbook_url == f"docs/runbooks.md#{alert.name.lower()}" == f"docs/runbooks.md#{anchor}"


def test_runbooks_document_every_shipped_alert():
    runbooks = (DOCS / "runbooks.md").read_text(encoding="utf-8")
    headings = {line[3:].strip() for line in runbooks.splitlines() if line.startswith("## ")}
    assert {a.name for a in rules.load_specs(rules.default_spec_paths()).alerts} <= headings


def test_docs_table_shows_every_shipped_alert_as_generated():
    table = (DOCS / "rules.md").read_text(encoding="utf-8")
    for alert in rules.load_specs(rules.default_spec_paths()).alerts:
        expr = alert.expr.replace("|", "\\|")  # escaped inside a markdown table
        assert f"| `{alert.name}` | {alert.severity} | {alert.notify} | `{expr}` | {alert.for_ or '—'}" in table, alert.name


def test_every_shipped_alert_says_whether_it_pages_or_files_a_ticket():
    """Declared in its spec (or, for an SLO, by the burn it stands for), never left to the default."""
    shipped = rules.load_specs(rules.default_spec_paths()).alerts
    assert [alert.name for alert in shipped if alert.notify not in ("page", "ticket")] == []
    notify = {alert.name: alert.notify for alert in shipped}
    assert notify["GpuFallenOffBus"] == "page" and notify["GpuAvailabilityErrorBudgetBurnFast"] == "page"
    # what the issue named as tickets: a slow burn, a capacity forecast, a job's idle GPU, a prediction
    assert {notify[name] for name in ("GpuAvailabilityErrorBudgetBurnSlow", "NodeFilesystemFillingUp",
                                      "GpuUtilizationBelowJobPeers", "JobGpusIdle", "GpuFailureRiskHigh")} == {"ticket"}
    # nothing critical is a ticket
    assert [alert.name for alert in shipped if alert.severity == "critical" and alert.notify == "ticket"] == []


def test_notify_is_read_from_the_alert_or_the_files_defaults_and_refused_when_wrong(tmp_path):
    spec = tmp_path / "notify.yaml"
    spec.write_text(textwrap.dedent("""\
        defaults: {notify: ticket, labels: {team: infra}, runbook_base: "https://wiki.example/runbooks"}
        alerts:
          Inherits: {expr: up == 0, severity: warning, summary: s, description: d}
          Pages: {expr: up == 0, severity: critical, notify: page, summary: s, description: d}
        """))
    loaded = {alert.name: alert for alert in rules.load_specs([spec]).alerts}
    assert (loaded["Inherits"].notify, loaded["Pages"].notify) == ("ticket", "page")
    generated = {rule["alert"]: rule for group in rules.prometheus_rule_file(rules.load_specs([spec]))["groups"]
                 for rule in group["rules"]}
    assert generated["Inherits"]["labels"]["notify"] == "ticket"
    spec.write_text(textwrap.dedent("""\
        defaults: {labels: {team: infra}, runbook_base: "https://wiki.example/runbooks"}
        alerts:
          Wrong: {expr: up == 0, severity: warning, notify: sometimes, summary: s, description: d}
          Reserved: {expr: up == 0, severity: warning, summary: s, description: d, labels: {notify: page}}
        """))
    with pytest.raises(rules.SpecError) as refused:
        rules.load_specs([spec])
    assert any("notify" in error and ":3:" in error for error in refused.value.errors), refused.value.errors
    assert len(refused.value.errors) == 2  # both at once
    assert any("'notify' is set by the generator" in error for error in refused.value.errors), refused.value.errors


def test_compact_kinds_expand_to_the_expected_promql(tmp_path):
    spec = tmp_path / "kinds.yaml"
    spec.write_text(textwrap.dedent("""\
        defaults: {for: 3m, labels: {team: infra}, runbook_base: "https://wiki.example/runbooks"}
        alerts:
          Ratio:
            kind: ratio
            numerator: sum by (node) (rate(errors_total[5m]))
            denominator: sum by (node) (rate(requests_total[5m]))
            op: ">"
            value: 0.25
            severity: info
            summary: s
            description: d
            runbook: https://wiki.example/ratio
          Up:
            kind: up
            job: node-exporter
            selector: {node: "=~gpu-.*"}
            for: 0s
            severity: warning
            summary: s
            description: d
            labels: {team: node}
          Spike:
            kind: counter_increase
            metric: errors_total
            window: 1h
            by: [node]
            above: 1000
            new_series: false
            severity: warning
            summary: s
            description: d
          Below:
            kind: baseline
            metric: vigil_gpu_power_watts
            side: below
            on: [node]
            severity: info
            summary: s
            description: d
        external_metrics: {errors_total: [node], requests_total: [node]}
        """))
    rule_file = rules.prometheus_rule_file(rules.load_specs([spec]))
    by_name = {r["alert"]: r for r in rule_file["groups"][0]["rules"]}
    assert rule_file["groups"][0]["name"] == "kinds"  # the file stem when no group is given
    assert by_name["Ratio"]["expr"] == ("(sum by (node) (rate(errors_total[5m]))) / "
                                        "((sum by (node) (rate(requests_total[5m]))) > 0) > 0.25")
    assert by_name["Ratio"]["for"] == "3m"
    assert by_name["Ratio"]["annotations"]["runbook_url"] == "https://wiki.example/ratio"
    assert by_name["Up"]["expr"] == 'up{job="node-exporter", node=~"gpu-.*"} == 0'
    assert "for" not in by_name["Up"] and by_name["Up"]["labels"] == {"severity": "warning", "notify": "page", "team": "node"}
    assert by_name["Spike"]["expr"] == "sum by (node) (increase(errors_total[1h])) > 1000"
    assert by_name["Below"]["expr"] == ('vigil_gpu_power_watts < on (node) group_left () '
                                        'vigil_baseline_lower{metric="vigil_gpu_power_watts"}')


def test_durations_and_numbers_format_deterministically():
    assert [format_duration(s) for s in (0, 0.5, 5, 90, 3600, 86400 + 61)] == \
        ["0s", "500ms", "5s", "1m30s", "1h", "1d1m1s"]
    assert parse_duration("1h30m") == 5400 and parse_duration("250ms") == 0.25
    with pytest.raises(ValueError):
        parse_duration("5 minutes")
    assert [format_number(v) for v in (0, 90, 90.0, 0.05, 1e3, -2.5)] == ["0", "90", "90", "0.05", "1000", "-2.5"]


def test_inhibit_rules_follow_the_specs():
    inhibit = rules.alertmanager_inhibit_rules(rules.load_specs(rules.default_spec_paths()))
    assert {"source_matchers": ['alertname="GpuNodeDown"', 'node=~".+"'], "target_matchers": ['alertname!="GpuNodeDown"'],
            "equal": ["node"]} in inhibit
    assert {"source_matchers": ['alertname="GpuOverheating"', 'node=~".+"', 'gpu=~".+"'],
            "target_matchers": ['alertname=~"GpuFailureRiskHigh|GpuUtilizationBelowJobPeers|GpuMemoryBandwidthBelowJobPeers|GpuTemperatureHigh"'],
            "equal": ["node", "gpu"]} in inhibit
    assert {"source_matchers": ['alertname="GpuFallenOffBus"', 'node=~".+"'], "target_matchers": ['alertname="GpuMissing"'],
            "equal": ["node"]} in inhibit
    assert len(inhibit) == len({yaml.safe_dump(rule) for rule in inhibit})  # no duplicates


@pytest.mark.skipif(shutil.which("amtool") is None, reason="amtool is not installed")
def test_amtool_accepts_a_config_with_the_generated_inhibit_rules(tmp_path):
    config = {
        "route": {"receiver": "vigil", "group_by": ["alertname", "node"]},
        "receivers": [{"name": "vigil", "webhook_configs": [{"url": "http://127.0.0.1:9/hook"}]}],
        "inhibit_rules": rules.alertmanager_inhibit_rules(rules.load_specs(rules.default_spec_paths())),
    }
    path = tmp_path / "alertmanager.yml"
    path.write_text(rules.dump_yaml(config))
    proc = subprocess.run(["amtool", "check-config", str(path)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f" - {len(config['inhibit_rules'])} inhibit rules" in proc.stdout


def test_a_subquery_over_days_reads_a_per_gpu_record_of_its_own_group_at_every_step():
    """GpuXidRecurring counts hardware-XID occasions over a week. It reads them from a record of its own
    group (one small series per GPU that had an XID, evaluated every minute), never the XID series
    themselves at every step of the week, whose cost grew with the fleet's XID history; the group holds
    nothing else (the XID alerts that page never wait behind it) and is evaluated at every whole minute,
    so each 10-minute step of the week finds the record's sample of that minute."""
    found = []
    for group in rules.load_specs(rules.default_spec_paths()).groups:
        for alert in group.alerts:
            for inner, window, step in re.findall(r"\(\(?([\w:]+)\)?\)?\[(\w+):(\w+)\]", alert.expr):
                if parse_duration(window) >= 86400:
                    found.append(alert.name)
                    assert [a.name for a in group.alerts] == [alert.name], group.name
                    assert [r.name for r in group.records] == [inner], (group.name, inner)  # a record, not raw series
                    assert "[7d" not in group.records[0].expr and parse_duration(group.interval or "15s") == 60
    assert found == ["GpuXidRecurring"]
