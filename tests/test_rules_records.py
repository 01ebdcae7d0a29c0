"""Recording rules in the specs (`records:`): generated before the group's alerts, linted like alerts plus
the level:metric:operations naming convention, entered into the metric catalog with the labels they keep
(so alerts may read them), every mistake reported as file:line all at once, and checked by promtool."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from vigil import rules
from vigil.cli import main
from vigil.rules.promtool import test_rules

from golden_support import check_golden

HEAD = 'group: rec\ndefaults: {labels: {team: gpu}, runbook_base: "https://wiki.example/runbooks"}\n'
GOOD = HEAD + """\
records:
  node:vigil_gpu_utilization:avg: avg by (node) (vigil_gpu_utilization_ratio)
  cluster:vigil_gpu_utilization:avg:
    expr: avg(node:vigil_gpu_utilization:avg)
    labels: {scope: cluster}
alerts:
  NodeGpusIdle:
    expr: node:vigil_gpu_utilization:avg < 0.05
    for: 10m
    severity: warning
    summary: "GPUs of {{ $labels.node }} idle"
    description: "average utilization {{ $value | humanizePercentage }}"
"""


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def errors_of(*paths: Path) -> list[str]:
    with pytest.raises(rules.SpecError) as caught:
        rules.load_specs(list(paths))
    return caught.value.errors


def test_records_come_before_the_alerts_of_their_group(tmp_path):
    ruleset = rules.load_specs([write(tmp_path, "rec.yaml", GOOD)])
    text = rules.dump_yaml(rules.prometheus_rule_file(ruleset))
    check_golden("rules/records-example.yml", text)
    group = rules.prometheus_rule_file(ruleset)["groups"][0]
    assert [r.get("record") or r.get("alert") for r in group["rules"]] == [
        "node:vigil_gpu_utilization:avg", "cluster:vigil_gpu_utilization:avg", "NodeGpusIdle"]
    assert "labels" not in group["rules"][0] and group["rules"][1]["labels"] == {"scope": "cluster"}
    assert [r.name for r in ruleset.records] == ["node:vigil_gpu_utilization:avg", "cluster:vigil_gpu_utilization:avg"]


def test_an_alert_reads_a_recorded_series_with_the_labels_it_keeps(tmp_path):
    """The catalog learns the recorded name and its labels: `node` is kept, `gpu` is summed away."""
    spec = write(tmp_path, "rec.yaml", GOOD.replace("GPUs of {{ $labels.node }}", "GPU {{ $labels.gpu }}"))
    [error] = errors_of(spec)
    assert error.startswith(f"{spec}:9: alert NodeGpusIdle: the templates use $labels.gpu")
    assert "(it has: node, severity, team)" in error


def test_a_series_recorded_in_another_file_is_known_to_every_file(tmp_path):
    reader = write(tmp_path, "a.yaml", HEAD.replace("group: rec", "group: reader") + """\
alerts:
  FleetIdle:
    expr: cluster:vigil_gpus:count == 0
    severity: info
    summary: s
    description: d
""")
    recorder = write(tmp_path, "b.yaml", "records:\n  cluster:vigil_gpus:count: count(vigil_gpu_up == 1)\n")
    assert [g.name for g in rules.load_specs([reader, recorder]).groups] == ["reader", "b"]
    assert any("'cluster:vigil_gpus:count' is exported by no" in e for e in errors_of(reader))


def test_every_record_mistake_is_reported_at_its_line_at_once(tmp_path):
    first = write(tmp_path, "a.yaml", HEAD + """\
records:
  node:vigil_gpu_utilization:avg: avg by (node) (vigil_gpu_utilization_ratio)
  gpu_busy_nodes:
    expr: count(vigil_gpu_utilization_ratio > 0.5)
  node:vigil_gpu:sum:
    expr: sum by (node (vigil_gpu_up)
  node:vigil_gpu_temp:max:
    expr: max by (nod) (vigil_gpu_temperature_celsius)
    labels: {__name__: x}
    colour: red
  node:vigil_gpu_power:rate5m:
    expr: rate(vigil_gpu_power_watts[5m])
  node:vigil_gpu_ignored:count:
    expr: count by (nod) (vigil_gpu_up)
    lint_ignore: [unknown-label]
""")
    second = write(tmp_path, "b.yaml", """\
records:
  node:vigil_gpu_utilization:avg: avg by (node) (vigil_gpu_utilization_ratio)
  vigil_gpu_up:
    expr: vigil_gpu_up
    lint_ignore: [recording-name]
  "9:bad:name": vector(1)
""")
    errors = errors_of(first, second)
    expected = [
        (first, 5, "record gpu_busy_nodes: recording rule name 'gpu_busy_nodes' does not follow "
                   "level:metric:operations", "[recording-name]"),
        (first, 8, "record node:vigil_gpu:sum: the expression is not valid PromQL", ""),
        (first, 9, "record node:vigil_gpu_temp:max: max by (nod): label 'nod' is not on the series", "[unknown-label]"),
        (first, 11, "record node:vigil_gpu_temp:max: label '__name__' is the record's name", ""),
        (first, 12, "record node:vigil_gpu_temp:max: unknown key 'colour'", ""),
        (first, 13, "record node:vigil_gpu_power:rate5m: rate() of 'vigil_gpu_power_watts'", "[rate-of-gauge]"),
        (second, 2, "duplicate record name 'node:vigil_gpu_utilization:avg' (first defined at "
                    f"{first}:4)", ""),
        (second, 3, "record vigil_gpu_up: an exporter already exports 'vigil_gpu_up'", ""),
        (second, 6, "record 9:bad:name: '9:bad:name' is not a valid metric name", ""),
    ]
    for path, line, start, end in expected:
        assert any(e.startswith(f"{path}:{line}: {start}") and e.endswith(end) for e in errors), (line, start, errors)
    assert len(errors) == len(expected), errors


def test_a_record_may_use_a_compact_kind_and_its_mistakes_are_reported_at_their_lines(tmp_path):
    """`kind: baseline, side: below` records what the alert kind would expand to; a bad kind, a kind's
    bad key and neither `expr` nor `kind` are each reported at their line, with the others."""
    spec = write(tmp_path, "kinds.yaml", """\
records:
  gpu:vigil_gpu_utilization_ratio:below_baseline:
    kind: baseline
    metric: vigil_gpu_utilization_ratio
    side: below
  gpu:vigil_gpu_temperature_celsius:gt85:
    kind: threshold
    metric: vigil_gpu_temperature_celsius
    op: ">"
    value: 85
""")
    ruleset = rules.load_specs([spec])
    assert {r.name: r.expr for r in ruleset.records} == {
        "gpu:vigil_gpu_utilization_ratio:below_baseline":
            'vigil_gpu_utilization_ratio < on (node, gpu) group_left () '
            'vigil_baseline_lower{metric="vigil_gpu_utilization_ratio"}',
        "gpu:vigil_gpu_temperature_celsius:gt85": "vigil_gpu_temperature_celsius > 85"}
    # the catalog learns what the kind's expression keeps, as for a written one
    assert "gpu" in dict((r.name, r.keeps) for r in ruleset.records)["gpu:vigil_gpu_temperature_celsius:gt85"]
    bad = write(tmp_path, "bad.yaml", """\
records:
  gpu:vigil_gpu_utilization_ratio:outside:
    kind: baseline
    metric: vigil_gpu_utilization_ratio
    side: sideways
  gpu:a:b:
    kind: treshold
    metric: vigil_gpu_up
  gpu:c:d:
    labels: {scope: gpu}
  gpu:e:f:
    kind: threshold
    metric: vigil_gpu_temperature_celsius
    op: ">"
""")
    errors = errors_of(bad)
    expected = [(5, "record gpu:vigil_gpu_utilization_ratio:outside: 'side' is 'sideways'"),
                (7, "record gpu:a:b: 'kind' is 'treshold'"),
                (9, "record gpu:c:d: needs 'expr' or a 'kind'"),
                (11, "record gpu:e:f: missing required key 'value'")]
    for line, start in expected:
        assert any(e.startswith(f"{bad}:{line}: {start}") for e in errors), (line, start, errors)
    assert len(errors) == len(expected), errors


def test_a_spec_of_records_only_and_the_check_command(tmp_path):
    spec = write(tmp_path, "rec.yaml", "records:\n  cluster:vigil_gpus_up:count: count(vigil_gpu_up == 1)\n")
    result = CliRunner().invoke(main, ["rules", "check", str(spec)])
    assert result.exit_code == 0, result.output
    bad = write(tmp_path, "bad.yaml", "records: []\n")
    result = CliRunner().invoke(main, ["rules", "check", str(bad)])
    assert result.exit_code != 0 and f"{bad}:1: 'records' must be a mapping" in result.output
    assert "Traceback" not in result.output


def test_promtool_unit_test_checks_the_recorded_series_and_the_alert_reading_it(tmp_path):
    ruleset = rules.load_specs([write(tmp_path, "rec.yaml", GOOD)])
    test_file = write(tmp_path, "rec_test.yaml", """\
        rule_files: [vigil-rules.yml]
        evaluation_interval: 1m
        tests:
          - interval: 1m
            input_series:
              - series: 'vigil_gpu_utilization_ratio{node="n1", gpu="0"}'
                values: '0.02x20'
              - series: 'vigil_gpu_utilization_ratio{node="n1", gpu="1"}'
                values: '0x20'
              - series: 'vigil_gpu_utilization_ratio{node="n2", gpu="0"}'
                values: '0.9x20'
            promql_expr_test:
              - expr: node:vigil_gpu_utilization:avg
                eval_time: 5m
                exp_samples:
                  - {labels: 'node:vigil_gpu_utilization:avg{node="n1"}', value: 0.01}
                  - {labels: 'node:vigil_gpu_utilization:avg{node="n2"}', value: 0.9}
              - expr: cluster:vigil_gpu_utilization:avg
                eval_time: 5m
                exp_samples:
                  - {labels: 'cluster:vigil_gpu_utilization:avg{scope="cluster"}', value: 0.455}
            alert_rule_test:
              - {eval_time: 9m, alertname: NodeGpusIdle, exp_alerts: []}
              - eval_time: 11m
                alertname: NodeGpusIdle
                exp_alerts:
                  - exp_labels: {severity: warning, notify: page, team: gpu, node: n1}
                    exp_annotations:
                      summary: GPUs of n1 idle
                      description: average utilization 1%
                      runbook_url: https://wiki.example/runbooks#nodegpusidle
        """)
    result = test_rules(ruleset, [test_file])
    assert result.ok, result.output
    moved = rules.load_specs([write(tmp_path, "rec.yaml", GOOD.replace("avg by (node)", "max by (node)"))])
    assert not test_rules(moved, [test_file]).ok  # the recorded value is what the test checks


def test_every_shipped_record_has_a_promql_expr_test():
    """The records' meta-test (the alerts' is in test_rules_catalog.py): a shipped recording rule without a
    `promql_expr_test` whose expression reads it fails here, naming it."""
    tested = " ".join(case["expr"] for path in rules.default_unit_test_paths()
                      for group in yaml.safe_load(path.read_text(encoding="utf-8"))["tests"]
                      for case in group.get("promql_expr_test", []))
    records = [record.name for record in rules.load_specs(rules.default_spec_paths()).records]
    assert [name for name in records if not re.search(rf"(?<![\w:]){re.escape(name)}(?![\w:])", tested)] == [], \
        "recording rules without a promql_expr_test in rules/tests/"


def test_the_catalog_command_lists_the_shipped_records_with_the_labels_they_keep():
    result = CliRunner().invoke(main, ["rules", "catalog", "slo:gpu_availability_errors:"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert "slo:gpu_availability_errors:ratio_rate5m\tgauge\t{slo}\trecording rule: slo.yaml" in lines
    assert len(lines) == 7  # one per window
