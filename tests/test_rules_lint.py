"""`vigil rules check` lint, as a new rule author meets it: every problem of every spec at once, at the
spec's own file:line, and nothing written while there is one."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from bench_support import load_tool
from vigil import rules
from vigil.cli import main
from vigil.rules.catalog import CATALOG_PATH, load_catalog, read_catalog_file

HEAD = """\
group: lint-test
defaults:
  labels: {team: gpu}
alerts:
"""


def write(tmp_path: Path, text: str, name: str = "spec.yaml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def errors_of(path: Path) -> list[str]:
    with pytest.raises(rules.SpecError) as caught:
        rules.load_specs([path])
    return caught.value.errors


def at(errors: list[str], path: Path, line: int, fragment: str) -> list[str]:
    return [e for e in errors if e.startswith(f"{path}:{line}: ") and fragment in e]


def test_five_kinds_of_mistake_are_reported_with_file_and_line_and_nothing_is_written(tmp_path):
    """The issue's acceptance test: unknown key, bad duration, missing severity, unknown metric and a
    missing runbook entry are all reported in one run, and `generate -o` writes nothing."""
    path = write(tmp_path, HEAD + """\
  GpuOverheating:
    expr: vigil_gpu_temperature_celsius{sensor="gpu"} >= 90
    severity: critical
    summary: s
    description: d
    colour: red
  GpuTemperatureHigh:
    expr: vigil_gpu_temperature_celsius{sensor="gpu"} > 85
    for: 10 minutes
    severity: warning
    summary: s
    description: d
  GpuMissing:
    expr: vigil_node_gpus_visible < vigil_node_gpus_expected
    summary: s
    description: d
  GpuHot:
    expr: vigil_gpu_temprature_celsius > 80
    severity: warning
    summary: s
    description: d
    runbook: gpuoverheating
  GpuLukewarm:
    expr: vigil_gpu_temperature_celsius > 60
    severity: info
    summary: s
    description: d
""")
    errors = errors_of(path)
    expected = [
        (10, "alert GpuOverheating: unknown key 'colour'"),
        (13, "alert GpuTemperatureHigh: 'for': '10 minutes' is not a Prometheus duration"),
        (17, "alert GpuMissing: missing required key 'severity'"),
        (21, "alert GpuHot: metric 'vigil_gpu_temprature_celsius' is exported by no vigil exporter"),
        (27, "alert GpuLukewarm: no runbook entry: docs/runbooks.md has no section #gpulukewarm"),
    ]
    for line, fragment in expected:
        assert at(errors, path, line, fragment), f"no error on line {line} with {fragment!r}:\n" + "\n".join(errors)
    assert len(errors) == 5, "\n".join(errors)
    assert "did you mean 'vigil_gpu_temperature_celsius'" in errors[3]

    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["rules", "generate", "-o", str(out), str(path)])
    assert result.exit_code == 1 and "5 errors in the rule specs" in result.output
    assert "Traceback" not in result.output
    assert not out.exists()


def test_a_missing_parenthesis_is_reported_at_the_specs_line_with_the_other_errors(tmp_path):
    path = write(tmp_path, HEAD + """\
  GpuOverheating:
    severity: critical
    summary: s
    description: d
    expr: max by (node) (vigil_gpu_temperature_celsius >= 90
  GpuTemperatureHigh:
    expr: vigil_gpu_temperature_celsius > 85
    severity: warning
    summary: s
    description: d
    sumary: typo
""")
    errors = errors_of(path)
    assert at(errors, path, 9, "alert GpuOverheating: the expression is not valid PromQL: unclosed left parenthesis")
    assert at(errors, path, 15, "alert GpuTemperatureHigh: unknown key 'sumary'")
    result = CliRunner().invoke(main, ["rules", "check", str(path)])
    assert result.exit_code == 1
    assert f"{path}:9: alert GpuOverheating: the expression is not valid PromQL" in result.output
    assert "promtool" not in result.output and "vigil-rules.yml" not in result.output  # never the generated file


def test_a_misspelt_metric_and_on_nod_fail_the_check(tmp_path):
    path = write(tmp_path, HEAD + """\
  GpuFallenOffBus:
    expr: vigil_gpu_up == 0 unless on (nod, gpu) vigil_gpu_collection_stalled == 1
    severity: critical
    summary: s
    description: d
    runbook: gpufallenoffbus
  GpuMissing:
    expr: vigil_node_gpu_visible < vigil_node_gpus_expected
    severity: critical
    summary: s
    description: d
    runbook: gpumissing
""")
    result = CliRunner().invoke(main, ["rules", "check", str(path)])
    assert result.exit_code == 1 and "OK" not in result.output
    assert (f"{path}:5: alert GpuFallenOffBus: on (nod, gpu): label 'nod' is not on the series it matches"
            in result.output)
    assert f"{path}:11: alert GpuMissing: metric 'vigil_node_gpu_visible' is exported by no" in result.output
    assert "did you mean 'vigil_node_gpus_visible'" in result.output
    assert "2 errors in the rule specs" in result.output


@pytest.mark.parametrize("expr, fragment", [
    ('vigil_gpu_temperature_celsius{sensr="gpu"} > 90', "'vigil_gpu_temperature_celsius' has no label 'sensr'"),
    ("sum by (nodes) (vigil_gpu_up) == 0", "sum by (nodes): label 'nodes' is not on the series it matches"),
    ("vigil_gpu_up < on (node) group_left (gpus) vigil_node_gpus_expected",
     "group_left (gpus): label 'gpus' is not on the series it matches"),
    ("rate(vigil_gpu_xid_errors_total[30s]) > 0", "rate() over [30s] sees fewer than 4 scrapes at the 15s scrape "
                                                  "interval; use a window of at least 1m [rate-window]"),
    ("absent(vigil_gpu_up)", "absent() without 'for'"),
])
def test_query_checks(tmp_path, expr, fragment):
    path = write(tmp_path, HEAD + f"""\
  GpuNodeDown:
    expr: '{expr}'
    severity: critical
    summary: s
    description: d
""")
    errors = errors_of(path)
    assert [e for e in errors if e.startswith(f"{path}:5: alert GpuNodeDown: ") and fragment in e], errors


def test_labels_the_templates_routing_and_inhibitions_need(tmp_path):
    path = write(tmp_path, """\
alerts:
  GpuNodeDown:
    expr: count by (node) (vigil_gpu_up == 0) > 4
    severity: critical
    summary: "GPU {{ $labels.gpu }} of {{ $labels.node }}"
    description: d
    inhibits: {GpuOverheating: [node, gpu]}
  GpuOverheating:
    expr: vigil_gpu_temperature_celsius >= 90
    severity: critical
    summary: s
    description: d
""")
    errors = errors_of(path)
    assert at(errors, path, 2, "the alert has no 'team' label, which the Alertmanager routing needs")
    assert at(errors, path, 2, "the templates use $labels.gpu, but the expression's result has no 'gpu' label")
    assert at(errors, path, 7, "inhibition GpuNodeDown -> GpuOverheating: the source alert GpuNodeDown has no "
                               "'gpu' label")
    assert not [e for e in errors if "$labels.node" in e]


def test_external_metrics_and_the_scrape_interval_are_declared_in_the_spec(tmp_path):
    path = write(tmp_path, HEAD.replace("alerts:\n", "scrape_interval: 5s\nexternal_metrics:\n"
                                        "  DCGM_FI_DEV_XID_ERRORS: [gpu, Hostname]\n  some_blackbox_probe_success:\nalerts:\n")
                 + """\
  DcgmXid:
    expr: changes(DCGM_FI_DEV_XID_ERRORS[1m]) > 0 and on (Hostname) some_blackbox_probe_success{x="y"} == 1
    severity: warning
    summary: "XID on {{ $labels.Hostname }}"
    description: d
    runbook: https://runbooks.example.org/dcgm-xid
""")
    ruleset = rules.load_specs([path])
    assert ruleset.alert("DcgmXid").expr.startswith("changes(DCGM_FI_DEV_XID_ERRORS[1m])")
    bad = write(tmp_path, path.read_text().replace("[gpu, Hostname]", "[gpu]"), "bad.yaml")
    assert any("on (Hostname): label 'Hostname' is not on the series it matches" in e for e in errors_of(bad))


def test_lint_findings_can_be_ignored_by_id_but_syntax_errors_cannot(tmp_path):
    path = write(tmp_path, HEAD + """\
  Custom:
    expr: some_other_metric > 1
    severity: info
    summary: s
    description: d
    lint_ignore: [unknown-metric, runbook]
  Broken:
    expr: (vigil_gpu_up
    severity: info
    summary: s
    description: d
    lint_ignore: [unknown-metric, runbook]
""")
    errors = errors_of(path)
    assert len(errors) == 1 and errors[0].startswith(f"{path}:12: alert Broken: the expression is not valid PromQL")


def test_the_shipped_specs_pass_the_lint():
    ruleset = rules.load_specs(rules.default_spec_paths())
    assert len(ruleset.alerts) >= 15


def test_the_catalog_covers_every_source_the_rules_read():
    catalog = load_catalog()
    assert catalog.get("node_filesystem_avail_bytes").labels >= {"device", "mountpoint", "fstype", "job", "instance"}
    assert catalog.get("prometheus_rule_group_last_duration_seconds").labels >= {"rule_group"}
    assert catalog.get("prometheus_notifications_dropped_total").type == "counter"
    assert catalog.get("alertmanager_notifications_failed_total").labels >= {"integration"}
    assert catalog.get("vigil_notifier_outbox_deliveries").labels >= {"state"}
    assert catalog.get("vigil_notifier_deliveries_total").labels >= {"channel", "result"}
    assert catalog.get("vigil_gpu_temperature_celsius").labels == {"node", "gpu", "uuid", "sensor", "job", "instance"}
    assert catalog.get("vigil_failure_risk") is not None and catalog.get("up").labels >= {"job", "node"}
    assert catalog.get("vigil_baseline_last_fit_timestamp_seconds").labels == {"job", "instance"}
    sources = json.loads(CATALOG_PATH.read_text())["sources"]
    assert {s.split()[0] for s in sources} >= {"node_exporter", "Prometheus", "Alertmanager", "vigil"}


@pytest.mark.e2e
def test_the_shipped_catalog_holds_what_the_installed_binaries_export(tmp_path):
    """`python tools/metric_catalog.py --write` keeps rules/metric_catalog.json; regenerate it when this fails."""
    generate = load_tool("metric_catalog.py").generate
    shipped = read_catalog_file(CATALOG_PATH)
    live = generate()["sources"]
    assert set(live) == set(shipped), "versions changed: run python tools/metric_catalog.py --write"
    for source, series in live.items():
        missing = sorted(set(series) - set(shipped[source]))
        assert not missing, f"{source} exports {missing[:10]} not in the catalog: run python tools/metric_catalog.py --write"
        for name, entry in series.items():
            have = shipped[source][name]["labels"]
            if entry["labels"] is not None and have is not None:
                assert set(entry["labels"]) <= set(have), f"{source} {name}: labels {entry['labels']} vs {have}"


def test_rules_catalog_lists_what_a_rule_may_read():
    result = CliRunner().invoke(main, ["rules", "catalog", "node_filesystem_readonly", "outbox"])
    assert result.exit_code == 0, result.output
    lines = dict(line.split("\t", 1) for line in result.output.splitlines())
    assert lines["node_filesystem_readonly"].startswith("gauge\t{device,fstype,instance,job,mountpoint}\tnode_exporter")
    assert lines["vigil_notifier_outbox_deliveries"] == "gauge\t{instance,job,state}\tvigil notifier"
    missing = CliRunner().invoke(main, ["rules", "catalog", "no_such_thing"])
    assert missing.exit_code == 1 and "no metric in the catalog contains 'no_such_thing'" in missing.output


def test_a_syntax_error_in_a_ratio_points_at_the_part_written_wrong(tmp_path):
    path = write(tmp_path, HEAD + """\
  GpuMemoryNearlyFull:
    kind: ratio
    numerator: sum by (node, gpu) (vigil_gpu_memory_used_bytes)
    denominator: sum by (node, gpu) (vigil_gpu_memory_total_bytes
    op: ">"
    value: 0.95
    severity: warning
    summary: s
    description: d
""")
    errors = errors_of(path)
    assert at(errors, path, 8, "alert GpuMemoryNearlyFull: the expression is not valid PromQL: unclosed left parenthesis")


def test_a_runbook_file_that_is_not_here_is_not_checked(tmp_path):
    """An installed vigil has no docs/ folder: its shipped specs must still load."""
    path = write(tmp_path, HEAD.replace("  labels: {team: gpu}\n", "  labels: {team: gpu}\n  runbook_base: docs/elsewhere.md\n")
                 + "  GpuHot:\n    expr: vigil_gpu_temperature_celsius > 80\n    severity: info\n    summary: s\n"
                   "    description: d\n")
    assert rules.load_specs([path]).alert("GpuHot").runbook_url == "docs/elsewhere.md#gpuhot"


def test_target_labels_of_the_deployment_are_declared_in_the_spec(tmp_path):
    alert = "  DiskFull:\n    expr: max by (cluster, instance) (node_filesystem_readonly) == 1\n" \
            "    severity: warning\n    summary: s\n    description: d\n    runbook: https://runbooks.example.org/x\n"
    undeclared = write(tmp_path, HEAD + alert, "a.yaml")
    assert any("sum by" not in e and "label 'cluster' is not on the series" in e and "'target_labels'" in e
               for e in errors_of(undeclared))
    declared = write(tmp_path, HEAD.replace("alerts:\n", "target_labels: [cluster]\nalerts:\n") + alert, "b.yaml")
    assert rules.load_specs([declared]).alert("DiskFull")


def test_functions_newer_than_the_stacks_prometheus_are_refused(tmp_path):
    path = write(tmp_path, HEAD + "  GpuHot:\n    expr: limitk(2, vigil_gpu_temperature_celsius) > 90\n"
                 "    severity: info\n    summary: s\n    description: d\n    runbook: gpuoverheating\n")
    assert errors_of(path) == [f"{path}:5: alert GpuHot: limitk() needs Prometheus 2.54; vigil's stack runs 2.42 "
                               "[prometheus-version]"]


def test_runbooks_are_read_from_the_current_directory_first(tmp_path, monkeypatch):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "runbooks.md").write_text("# Our runbooks\n\n## GpuLukewarm\n\nWarm it up.\n")
    path = write(tmp_path, HEAD + "  GpuLukewarm:\n    expr: vigil_gpu_temperature_celsius < 20\n    severity: info\n"
                 "    summary: s\n    description: d\n  GpuOverheating:\n    expr: vigil_gpu_temperature_celsius > 90\n"
                 "    severity: info\n    summary: s\n    description: d\n")
    monkeypatch.chdir(tmp_path)
    assert errors_of(path) == [f"{path}:10: alert GpuOverheating: no runbook entry: docs/runbooks.md has no section "
                               "#gpuoverheating; add one headed with the alert's name (## AlertName) or point "
                               "'runbook' at an existing section [runbook]"]
