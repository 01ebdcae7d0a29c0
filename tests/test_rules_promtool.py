"""The generated rules against the real promtool: `check rules` and the unit tests in rules/tests/."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from vigil import rules
from vigil.cli import main

pytestmark = pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool is not installed")

SHIPPED = rules.default_spec_paths()


def run(*args: str, env: dict | None = None):
    return CliRunner().invoke(main, ["rules", *args], env=env)


@pytest.mark.parametrize("extra", [[], ["--max-for", "5s"]])
def test_promtool_check_rules_passes_on_the_shipped_rules(extra):
    result = run("check", *extra)
    assert result.exit_code == 0, result.output
    ruleset = rules.load_specs(SHIPPED)
    assert f"OK: {len(ruleset.alerts)} alerts in {len(ruleset.groups)} groups pass promtool check rules" in result.output


def test_promtool_unit_tests_pass_against_freshly_generated_rules():
    result = run("test")
    assert result.exit_code == 0, result.output
    assert f"OK: {len(rules.default_unit_test_paths())} promtool test files pass" in result.output


def test_check_reports_promtool_template_errors(tmp_path):
    spec = tmp_path / "bad_template.yaml"
    spec.write_text(
        "alerts:\n  Broken:\n    expr: vigil_gpu_up == 0\n    severity: warning\n"
        "    summary: 'GPU {{ $labels.gpu | nosuchfunction }}'\n    description: d\n"
        "    labels: {team: gpu}\n    runbook: https://runbooks.example.org/broken\n", encoding="utf-8")
    result = run("check", str(spec))
    assert result.exit_code == 1
    assert "promtool check rules failed" in result.output and "Broken" in result.output
    assert "Traceback" not in result.output


def test_missing_promtool_is_a_clear_error():
    result = run("check", env={"VIGIL_PROMTOOL": "/nonexistent/promtool"})
    assert result.exit_code == 1
    assert "cannot find VIGIL_PROMTOOL='/nonexistent/promtool'" in result.output
    assert "apt-get install prometheus" in result.output


def test_test_files_are_shared_out_costliest_first_onto_the_lightest_worker():
    from vigil.rules.promtool import _share_out

    assert _share_out(["a", "b", "c", "d", "e"], [5, 4, 3, 2, 1], workers=2) == [["a", "d", "e"], ["b", "c"]]
    assert _share_out(["a", "b"], [1, 9], workers=8) == [["b"], ["a"]]  # no more batches than files


def test_a_test_files_cost_is_its_evaluation_steps_not_its_size(tmp_path):
    """promtool evaluates every rule at each evaluation_interval up to a group's last eval_time: three
    hours at 1m cost 181 evaluations however short the file; a file promtool will refuse costs 1."""
    from vigil.rules.promtool import evaluation_steps

    long_tests = tmp_path / "long.yaml"
    long_tests.write_text("evaluation_interval: 1m\ntests:\n"
                          "  - alert_rule_test: [{eval_time: 1h, alertname: A}, {eval_time: 3h, alertname: A}]\n"
                          "  - promql_expr_test: [{eval_time: 30m, expr: up}]\n")
    assert evaluation_steps(long_tests) == 181 + 31
    coarse = tmp_path / "coarse.yaml"
    coarse.write_text("evaluation_interval: 10m\ntests:\n  - alert_rule_test: [{eval_time: 3h, alertname: A}]\n")
    assert evaluation_steps(coarse) == 19
    broken = tmp_path / "broken.yaml"
    broken.write_text("tests: [{alert_rule_test: [{eval_time: soon}]}]\n")
    assert evaluation_steps(broken) == 1
    assert evaluation_steps(tmp_path / "missing.yaml") == 1
