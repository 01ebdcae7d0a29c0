"""Spec validation: every mistake is reported as file:line: message, all at once, never a traceback."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from vigil import rules
from vigil.cli import main

GOOD = """\
alerts:
  DiskFull:
    kind: threshold
    metric: node_filesystem_avail_bytes
    op: "<"
    value: 0.05
    severity: warning
    summary: "disk full on {{ $labels.instance }}"
    description: "free space is {{ $value }}"
defaults: {labels: {team: storage}, runbook_base: "https://runbooks.example.org/vigil"}
external_metrics: [a, b]
"""

# Line numbers matter: the tests below expect errors on exactly these lines (BadKind's metric: no error).
BAD = """\
defaults:
  labels: {team: gpu}
  colour: blue
alerts:
  BadSeverity:
    kind: threshold
    metric: vigil_gpu_up
    op: "=="
    value: 0
    severity: page
    summary: s
    description: d
  BadKind:
    kind: thresold
    metric: vigil_gpu_up
    severity: warning
    summary: s
    description: d
  RateOfGauge:
    expr: rate(vigil_gpu_temperature_celsius[5m]) > 1
    severity: info
    sumary: typo
    description: d
  AbsentNoFor:
    kind: absent
    metric: up
    selector: {job: vigil-gpu}
    severity: warning
    summary: s
    description: d
  Division:
    expr: vigil_node_gpus_visible / vigil_node_gpus_expected < 1
    severity: warning
    summary: s
    description: "{{ $value"
    for: 5 minutes
    inhibited_by: {NoSuchAlert: [node]}
  BadSeverity:
    expr: vigil_gpu_up == 0
    severity: critical
    summary: s
    description: d
"""


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def test_every_mistake_is_reported_with_its_file_and_line(tmp_path):
    path = write(tmp_path, "bad.yaml", BAD)
    with pytest.raises(rules.SpecError) as caught:
        rules.load_specs([path])
    errors = caught.value.errors
    expected = [
        (3, "defaults: unknown key 'colour'"),
        (10, "alert BadSeverity: 'severity' is 'page'; expected one of critical, warning, info"),
        (14, "alert BadKind: 'kind' is 'thresold'"),
        (19, "alert RateOfGauge: missing required key 'summary'"),
        (22, "alert RateOfGauge: unknown key 'sumary'"),
        (19, "rate() of 'vigil_gpu_temperature_celsius', which looks like a gauge"),
        (24, "absent() without 'for'"),
        (31, "division whose denominator is not guarded"),
        (35, "unbalanced {{ }} in the description template"),
        (36, "'for': '5 minutes' is not a Prometheus duration"),
        (37, "inhibition refers to unknown alert 'NoSuchAlert'"),
        (38, "duplicate key 'BadSeverity' (first defined on line 5)"),
        *[(line, "no runbook entry") for line in (5, 19, 24, 31)],  # no runbook section for the test's alerts
    ]
    assert len(errors) == len(expected), "\n".join(errors)
    for line, fragment in expected:
        matching = [e for e in errors if e.startswith(f"{path}:{line}: ") and fragment in e]
        assert matching, f"no error on line {line} containing {fragment!r}; got:\n" + "\n".join(errors)
    assert str(caught.value) == "\n".join(errors)
    assert all(e.startswith(f"{path}:") for e in errors)


def test_duplicate_alert_names_across_files_point_at_both(tmp_path):
    first, second = write(tmp_path, "a.yaml", GOOD), write(tmp_path, "b.yaml", "group: other\n" + GOOD)
    with pytest.raises(rules.SpecError) as caught:
        rules.load_specs([first, second])
    assert caught.value.errors == [f"{second}:3: duplicate alert name 'DiskFull' (first defined at {first}:2)"]


def test_yaml_syntax_and_missing_files_are_spec_errors(tmp_path):
    broken = write(tmp_path, "broken.yaml", "alerts:\n  A: [unclosed\n")
    missing = tmp_path / "missing.yaml"
    with pytest.raises(rules.SpecError) as caught:
        rules.load_specs([broken, missing])
    assert len(caught.value.errors) == 2
    assert caught.value.errors[0].startswith(f"{broken}:3: invalid YAML")
    assert caught.value.errors[1].startswith(f"{missing}:1: cannot read spec file")


def test_lint_ignore_silences_only_the_named_check(tmp_path):
    spec = GOOD.replace("kind: threshold\n    metric: node_filesystem_avail_bytes\n    op: \"<\"\n    value: 0.05",
                        "expr: a / b < 0.05\n    lint_ignore: [unguarded-division]")
    assert rules.load_specs([write(tmp_path, "ok.yaml", spec)]).alert("DiskFull").expr == "a / b < 0.05"
    with pytest.raises(rules.SpecError, match=r"unknown lint check 'no-such-check'"):
        rules.load_specs([write(tmp_path, "bad.yaml", spec.replace("unguarded-division", "no-such-check"))])


@pytest.mark.parametrize("expr", [
    "a / (b > 0) < 1",
    "sum(a) / clamp_min(sum(b), 1) > 0.5",
    "a / on (node) group_left () (b != 0) > 2",
    'a{path="/x/y"} / 2 > 1',
])
def test_guarded_divisions_pass_lint(tmp_path, expr):
    spec = GOOD.replace("kind: threshold\n    metric: node_filesystem_avail_bytes\n    op: \"<\"\n    value: 0.05",
                        f"expr: '{expr}'\n    lint_ignore: [missing-label]")  # sum() drops the summary's instance
    assert rules.load_specs([write(tmp_path, "ok.yaml", spec)]).alert("DiskFull").expr == expr


def test_cli_shows_all_errors_without_a_traceback(tmp_path):
    path = write(tmp_path, "bad.yaml", BAD)
    for verb in ("generate", "check"):
        result = CliRunner().invoke(main, ["rules", verb, str(path)])
        assert result.exit_code == 1, result.output
        assert "Traceback" not in result.output and result.exception.__class__ is SystemExit
        assert f"{path}:10: alert BadSeverity: 'severity' is 'page'" in result.output
        assert f"{path}:38: duplicate key 'BadSeverity'" in result.output
        assert "errors in the rule specs" in result.output


def test_cli_rejects_a_bad_max_for(tmp_path):
    result = CliRunner().invoke(main, ["rules", "generate", "--max-for", "soon"])
    assert result.exit_code == 2
    assert "'soon' is not a duration (seconds like 10 or 0.5, or a Prometheus duration like 30s" in result.output


@pytest.mark.parametrize("text, line, fragment", [
    ("- just\n- a list\n", 1, "a spec file must be a mapping with an 'alerts' key"),
    ("group: g\n", 1, "spec: missing required key 'alerts'"),
    ("alerts: {}\n", 1, "'alerts' must be a mapping of alert name: alert"),
    ("alerts:\n  A:\n    expr: x\n    severity: info\n    summary: 1.5\n    description: d\n", 5,
     "'summary' must be a non-empty string, got 1.5: quote it, like \"1.5\""),
    ("alerts:\n  bad-name:\n    expr: x\n    severity: info\n    summary: s\n    description: d\n", 2,
     "alert name 'bad-name' must start with a letter"),
    ("alerts:\n  A:\n    expr: x\n    severity: info\n    summary: s\n    description: d\n    labels: {severity: x}\n",
     7, "label 'severity' is set by the generator"),
    ("alerts:\n  A:\n    kind: threshold\n    metric: 9bad\n    op: '=>'\n    value: high\n    severity: info\n"
     "    summary: s\n    description: d\n", 4, "'metric' '9bad' is not a valid metric name"),
    ("alerts:\n  A:\n    kind: counter_increase\n    metric: x_total\n    window: 10\n    severity: info\n"
     "    summary: s\n    description: d\n", 5, "'window' must be a duration string like 5m, got 10"),
    ("alerts:\n  A:\n    kind: counter_increase\n    metric: x_total\n    window: [5m]\n    severity: info\n"
     "    summary: s\n    description: d\n", 5, "'window' must be a duration string like 5m, got ['5m']"),  # no Located(...)
    ("alerts:\n  A:\n    expr: x\n    severity: info\n    summary: s\n    description: d\n    inhibits: {A: [node]}\n",
     7, "alert A cannot inhibit itself"),
])
def test_single_mistakes(tmp_path, text, line, fragment):
    path = write(tmp_path, "spec.yaml", text)
    with pytest.raises(rules.SpecError) as caught:
        rules.load_specs([path])
    assert any(e.startswith(f"{path}:{line}: ") and fragment in e for e in caught.value.errors), caught.value.errors
