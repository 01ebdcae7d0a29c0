"""The shipped alert catalog as a whole: every alert has a promtool case that fires (with the spec's
severity, team and every annotation) and one where it stays quiet; the alert list in docs/rules.md is
generated from the specs; the compact kinds the node and service families use; the Watchdog never pages."""

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
from vigil.cli import main
from vigil.rules.alert_list import alert_list_markdown, replace_generated
from vigil.rules.alertmanager_routing import ROUTING_FILE, load_routing
from vigil.stack.settings import load_settings
from vigil.stack.config import RunLayout, alertmanager_config, dump_config

from golden_support import UPDATE

DOCS = Path(__file__).parent.parent / "docs"
SHIPPED = rules.default_spec_paths()


def shipped_cases() -> dict[str, dict[str, list[dict]]]:
    """alertname -> {"fires": [expected alerts of each firing case], "quiet": [...]} over every test file."""
    cases: dict[str, dict[str, list]] = {}
    for path in rules.default_unit_test_paths():
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
        for group in doc["tests"]:
            for case in group.get("alert_rule_test", []):
                entry = cases.setdefault(case["alertname"], {"fires": [], "quiet": []})
                entry["fires" if case["exp_alerts"] else "quiet"].append(case["exp_alerts"])
    return cases


def test_every_shipped_alert_has_a_firing_and_a_quiet_promtool_case():
    """The meta-test: an alert added to a spec without both cases fails here, naming it."""
    names = {a.name for a in rules.load_specs(SHIPPED).alerts}
    cases = shipped_cases()
    assert sorted(n for n in names if not cases.get(n, {}).get("fires")) == [], "alerts never tested firing"
    assert sorted(n for n in names - {"Watchdog"} if not cases.get(n, {}).get("quiet")) == [], \
        "alerts never tested quiet"
    assert sorted(set(cases) - names) == [], "test cases for alerts that no spec ships"


def test_firing_cases_expect_the_specs_labels_and_every_annotation():
    ruleset = rules.load_specs(SHIPPED)
    for name, entry in shipped_cases().items():
        alert = ruleset.alert(name)
        for expected in (a for case in entry["fires"] for a in case):
            labels = expected["exp_labels"]
            assert labels["severity"] == alert.severity, name
            assert dict(alert.labels).items() <= labels.items(), name
            assert set(expected["exp_annotations"]) == {"summary", "description", "runbook_url"}, name
            assert expected["exp_annotations"]["runbook_url"] == alert.runbook_url, name


def test_test_files_are_in_the_form_promtool_2_42_accepts():
    for path in rules.default_unit_test_paths():
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
        assert doc["rule_files"] == [rules.RULE_FILE_NAME], path
        assert all("interval" in group for group in doc["tests"]), f"{path}: every test group needs an interval"


def test_every_alert_has_a_team_and_a_runbook_section():
    headings = {line[3:].strip() for line in (DOCS / "runbooks.md").read_text(encoding="utf-8").splitlines()
                if line.startswith("## ")}
    for alert in rules.load_specs(SHIPPED).alerts:
        assert "team" in dict(alert.labels), alert.name
        assert alert.name in headings, alert.name
        assert alert.runbook_url == f"docs/runbooks.md#{alert.name.lower()}"


def test_docs_list_every_shipped_alert_as_generated():
    """docs/rules.md's alert list is generated; VIGIL_UPDATE_GOLDEN=1 rewrites it (review `git diff docs`)."""
    page = DOCS / "rules.md"
    text = page.read_text(encoding="utf-8")
    current = replace_generated(text, alert_list_markdown(rules.load_specs(SHIPPED)))
    if UPDATE:
        page.write_text(current, encoding="utf-8")
        text = current
    assert text == current, "docs/rules.md's alert list is out of date; rerun with VIGIL_UPDATE_GOLDEN=1 and review"
    for alert in rules.load_specs(SHIPPED).alerts:
        assert f"| `{alert.name}` | {alert.severity} |" in text


def spec_file(tmp_path: Path, alerts: str) -> Path:
    """A spec of `alerts` (YAML, indented by 2) with the labels and runbook base every spec needs."""
    spec = tmp_path / "spec.yaml"
    spec.write_text('defaults: {labels: {team: infra}, runbook_base: "https://wiki.example/runbooks"}\n'
                    "alerts:\n" + textwrap.indent(textwrap.dedent(alerts), "  "), encoding="utf-8")
    return spec


def test_fill_prediction_grows_and_stale_kinds_expand_to_the_expected_promql(tmp_path):
    spec = spec_file(tmp_path, """\
          Fill:
            kind: fill_prediction
            metric: node_filesystem_avail_bytes
            size: node_filesystem_size_bytes
            selector: {fstype: ext4}
            window: 6h
            horizon: 4h
            free_below: 0.2
            for: 1h
            severity: critical
            summary: s
            description: d
          FillAnyway:
            kind: fill_prediction
            metric: node_filesystem_avail_bytes
            window: 1h
            horizon: 30m
            for: 1h
            severity: warning
            summary: s
            description: d
          Grows:
            kind: grows
            metric: vigil_disk_smart_attribute_raw
            selector: {attribute_id: "=~5|197"}
            window: 1h
            severity: warning
            summary: s
            description: d
          Stale:
            kind: stale
            metric: vigil_smart_last_success_timestamp_seconds
            max_age: 1h30m
            severity: warning
            summary: s
            description: d
        """)
    by_name = {r["alert"]: r["expr"] for r in rules.prometheus_rule_file(rules.load_specs([spec]))["groups"][0]["rules"]}
    assert by_name["Fill"] == ('(node_filesystem_avail_bytes{fstype="ext4"} / (node_filesystem_size_bytes{fstype="ext4"} > 0) '
                               '< 0.2) and (predict_linear(node_filesystem_avail_bytes{fstype="ext4"}[6h], 14400) < 0)')
    assert by_name["FillAnyway"] == "predict_linear(node_filesystem_avail_bytes[1h], 1800) < 0"
    assert by_name["Grows"] == ('vigil_disk_smart_attribute_raw{attribute_id=~"5|197"} > '
                                'vigil_disk_smart_attribute_raw{attribute_id=~"5|197"} offset 1h')
    assert by_name["Stale"] == "time() - vigil_smart_last_success_timestamp_seconds > 5400"


def test_fill_prediction_refuses_half_a_fraction_and_a_bad_horizon_with_lines(tmp_path):
    spec = spec_file(tmp_path, """\
          Fill:
            kind: fill_prediction
            metric: node_filesystem_avail_bytes
            size: node_filesystem_size_bytes
            window: 6h
            horizon: 1 day
            severity: warning
            summary: s
            description: d
        """)
    with pytest.raises(rules.SpecError) as error:
        rules.load_specs([spec])
    messages = "\n".join(error.value.errors)
    assert f"{spec}:6: alert Fill: 'size' and 'free_below' go together" in messages
    assert f"{spec}:8: alert Fill: 'horizon'" in messages


@pytest.mark.skipif(shutil.which("amtool") is None, reason="amtool is not installed")
def test_the_stacks_alertmanager_routes_the_watchdog_away_from_paging(tmp_path):
    settings = load_settings(None, {"sim_nodes": 3})
    ruleset = rules.load_specs(SHIPPED)
    config = alertmanager_config(settings, RunLayout(tmp_path), ruleset, load_routing(ROUTING_FILE, ruleset))
    path = tmp_path / "alertmanager.yml"
    path.write_text(dump_config(config), encoding="utf-8")

    def receiver(*labels: str) -> str:
        proc = subprocess.run(["amtool", "config", "routes", "test", f"--config.file={path}", *labels],
                              capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        return proc.stdout.strip()

    watchdog = rules.load_specs(SHIPPED).alert("Watchdog")
    assert receiver("alertname=Watchdog", f"severity={watchdog.severity}", "team=platform") == "watchdog"
    assert receiver("alertname=NodeDown", "severity=critical", "team=infra") == "infra-critical"
    assert receiver("alertname=NodeFilesystemSpaceLow", "severity=warning") == "page-warning"
    [silent] = [r for r in config["receivers"] if r["name"] == "watchdog"]
    # only the notifier's heartbeat hears it (which pages when it stops arriving, never for the Watchdog)
    assert [hook["url"].rsplit("/", 4)[1:] for hook in silent["webhook_configs"]] == [["api", "v1", "heartbeat", "watchdog"]]


MUTATIONS = [  # (spec, text, changed text, the alert whose promtool case must then fail)
    ("node.yaml", "    value: 0.15\n", "    value: 0.08\n", "NodeFilesystemSpaceLow"),
    ("node.yaml", "    window: 1h\n    keep_firing_for: 1d\n", "    window: 1h\n", "DiskSmartAttributeGrowing"),
    ("service.yaml", "    value: 50\n", "    value: 150\n", "NotifierOutboxBacklog"),
    ("gpu_temperature.yaml", ":gt85 >= 90\n", ":gt85 >= 95\n", "GpuOverheating"),
]


@pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool is not installed")
def test_the_unit_tests_catch_changed_rules(tmp_path):
    """Mutation check: a threshold or a keep_firing_for moved in a family's spec fails that alert's case."""
    texts = {path.name: path.read_text(encoding="utf-8") for path in SHIPPED}
    for spec, old, new, _ in MUTATIONS:
        assert texts[spec].count(old) == 1, old
        texts[spec] = texts[spec].replace(old, new)
    args = []
    for name, text in texts.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
        args += ["--spec", str(tmp_path / name)]
    # only the unit-test files that hold a mutated alert's cases: the full catalog run is the test above,
    # and each promtool run over every file costs most of a minute on two cores
    mutated = {alert for *_, alert in MUTATIONS}
    test_files = [str(path) for path in rules.default_unit_test_paths()
                  if mutated & set(re.findall(r"alertname: (\w+)", path.read_text(encoding="utf-8")))]
    assert 0 < len(test_files) < len(rules.default_unit_test_paths())
    result = CliRunner().invoke(main, ["rules", "test", *args, *test_files])
    assert result.exit_code == 1 and "promtool test rules failed" in result.output
    failed = set(re.findall(r"alertname: (\w+)", result.output))
    assert failed == {alert for *_, alert in MUTATIONS}
