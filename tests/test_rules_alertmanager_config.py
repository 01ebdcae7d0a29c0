"""`vigil rules generate --alertmanager`: the Alertmanager configuration generated from the specs and the
routing file passes the real amtool, routes sample alerts to the expected receivers, mutes maintenance
windows, and a broken routing file is refused with every file:line at once."""

from __future__ import annotations

import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from vigil.cli import main
from vigil.stack.settings import load_settings
from vigil.stack.config import RunLayout, write_stack_files
from vigil.stack.config.alertmanager import notifier_webhook_url

AMTOOL = shutil.which("amtool")
needs_amtool = pytest.mark.skipif(AMTOOL is None, reason="amtool (prometheus-alertmanager) is not installed")


def generate(tmp_path, *args: str) -> Path:
    result = CliRunner().invoke(main, ["rules", "generate", "-o", str(tmp_path / "out"), "--alertmanager", *args])
    assert result.exit_code == 0, result.output
    return tmp_path / "out" / "alertmanager.yml"


def amtool(*args: str) -> str:
    proc = subprocess.run([AMTOOL, *args], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout.strip()


@needs_amtool
def test_the_generated_config_passes_amtool_and_routes_by_team_and_severity(tmp_path):
    token = tmp_path / "token"
    path = generate(tmp_path, "--notifier-url", "http://127.0.0.1:9999/api/v1/alerts/alertmanager",
                    "--token-file", str(token))
    assert "SUCCESS" in amtool("check-config", str(path))

    def receiver(*labels: str) -> str:
        return amtool("config", "routes", "test", f"--config.file={path}", *labels)

    assert receiver("alertname=Watchdog", "severity=info", "team=platform") == "watchdog"
    assert receiver("alertname=GpuFallenOffBus", "severity=critical", "team=gpu", "node=n1", "gpu=0") == "gpu-critical"
    assert receiver("alertname=GpuTemperatureHigh", "severity=warning", "team=gpu") == "gpu-warning"
    assert receiver("alertname=NodeFilesystemSpaceLow", "severity=warning", "team=infra") == "infra-warning"
    assert receiver("alertname=TargetDown", "severity=warning", "team=platform") == "platform-warning"
    assert receiver("alertname=JobHung", "severity=critical", "team=jobs", "job_id=4242", "tenant=ml-research") == "jobs-critical"
    assert receiver("alertname=Mine", "severity=info", "team=someone-else") == "page-info"
    assert receiver("alertname=NoLabels") == "page-critical"
    config = yaml.safe_load(path.read_text())
    # the Watchdog first, re-sent every minute: the notifier's heartbeat hears it well inside its timeout
    assert config["route"]["routes"][0] == {"receiver": "watchdog", "matchers": ['alertname="Watchdog"'],
                                            "group_wait": "0s", "group_interval": "10s", "repeat_interval": "1m"}
    assert config["route"]["group_by"] == ["alertname", "node", "gpu", "job_id"]  # one incident per job too
    hooks = [r["webhook_configs"][0] for r in config["receivers"] if r["name"] != "watchdog"]
    assert len(hooks) == 15 and all(h["url"] == "http://127.0.0.1:9999/api/v1/alerts/alertmanager" for h in hooks)
    assert {h["http_config"]["authorization"]["credentials_file"] for h in hooks} == {str(token)}
    # the Watchdog goes to the heartbeat beside the webhook (which never pages for it), never resolved
    [watchdog] = [r for r in config["receivers"] if r["name"] == "watchdog"]
    assert watchdog["webhook_configs"] == [{
        "url": "http://127.0.0.1:9999/api/v1/heartbeat/watchdog", "send_resolved": False, "max_alerts": 0,
        "http_config": {"authorization": {"type": "Bearer", "credentials_file": str(token)}}}]
    assert "&id" not in path.read_text()  # every receiver its own mapping, no YAML aliases
    inhibit = config["inhibit_rules"]
    assert {"source_matchers": ['alertname="GpuNodeDown"', 'node=~".+"'], "target_matchers": ['alertname!="GpuNodeDown"'],
            "equal": ["node"]} in inhibit  # node down silences the node's GPU, disk and job alerts
    [lost] = [r for r in inhibit if r["source_matchers"][0] == 'alertname="GpuFallenOffBus"' and "gpu" in r["equal"]]
    assert lost["equal"] == ["node", "gpu"]
    assert {"GpuUncorrectableEccErrors", "GpuCriticalXid", "GpuOverheating"} <= set(
        lost["target_matchers"][0].split("=~", 1)[1].strip('"').split("|"))


@needs_amtool
def test_maintenance_windows_mute_only_the_routes_they_name(tmp_path):
    routing = tmp_path / "routing.yaml"
    routing.write_text(textwrap.dedent("""\
        group_by: [alertname, node]
        group_wait: 10s
        maintenance:
          - name: infra-weekly
            teams: [infra]
            severities: [warning, info]
            time_intervals:
              - weekdays: [tuesday]
                times: [{start_time: "02:00", end_time: "04:00"}]
                location: UTC
          - name: freeze
            time_intervals:
              - months: [december]
                days_of_month: ["24:26"]
        """))
    path = generate(tmp_path, "--routing", str(routing))
    assert "SUCCESS" in amtool("check-config", str(path))
    config = yaml.safe_load(path.read_text())
    assert [t["name"] for t in config["time_intervals"]] == ["infra-weekly", "freeze"]
    assert config["time_intervals"][0]["time_intervals"][0]["weekdays"] == ["tuesday"]
    assert config["route"]["group_by"] == ["alertname", "node"] and config["route"]["group_wait"] == "10s"
    leaves = {leaf["receiver"]: leaf.get("mute_time_intervals", [])
              for route in config["route"]["routes"] for leaf in route.get("routes", [route])}
    assert leaves["infra-warning"] == ["infra-weekly", "freeze"] and leaves["infra-info"] == ["infra-weekly", "freeze"]
    assert leaves["infra-critical"] == ["freeze"] and leaves["gpu-warning"] == ["freeze"]
    assert leaves["page-warning"] == ["freeze"]
    assert leaves["watchdog"] == []  # the Watchdog keeps proving the pipeline during maintenance


def test_a_broken_routing_file_reports_every_problem_with_its_line_and_writes_nothing(tmp_path):
    routing = tmp_path / "routing.yaml"
    routing.write_text(textwrap.dedent("""\
        group_by: [alertname]
        group_wiat: 10s
        inhibits:
          - source: GpuLost
            targets: [GpuOverheating]
            equal: [node, gpu]
        maintenance:
          - name: w
            teams: [nobody]
            severities: [page]
            time_intervals:
              - weekday: [monday]
        """))
    result = CliRunner().invoke(main, ["rules", "generate", "-o", str(tmp_path / "out"), "--alertmanager",
                                       "--routing", str(routing)])
    assert result.exit_code == 1 and "Traceback" not in result.output
    for line, text in [(2, "unknown key 'group_wiat'"), (4, "unknown alert 'GpuLost'"),
                       (9, "no alert has team 'nobody'"), (10, "unknown severity 'page'"),
                       (12, "unknown time interval key 'weekday'")]:
        assert f"{routing}:{line}: " in result.output and text in result.output, (line, result.output)
    assert not (tmp_path / "out").exists()


@needs_amtool
def test_a_url_that_is_not_the_notifiers_webhook_leaves_the_watchdog_without_integration(tmp_path):
    path = generate(tmp_path, "--notifier-url", "https://alerts.example.com/hook")
    assert "SUCCESS" in amtool("check-config", str(path))
    config = yaml.safe_load(path.read_text())
    assert {"name": "watchdog"} in config["receivers"]  # no heartbeat to post to: the Watchdog stays silent
    assert amtool("config", "routes", "test", f"--config.file={path}", "alertname=Watchdog") == "watchdog"


def test_the_new_outputs_need_an_output_directory():
    result = CliRunner().invoke(main, ["rules", "generate", "--alertmanager"])
    assert result.exit_code == 2 and "give -o DIR" in result.output


def test_vigil_up_writes_what_rules_generate_writes_for_the_same_notifier(tmp_path):
    """One generator: the stack's alertmanager.yml is the CLI's, but for the stack's group timings."""
    settings = load_settings(None, {"run_dir": tmp_path / "run", "sim_nodes": 2})
    layout = RunLayout(settings.run_path)
    write_stack_files(settings, layout, ["node-1", "node-2"])
    stack = yaml.safe_load(layout.alertmanager_config.read_text())
    path = generate(tmp_path, "--notifier-url", notifier_webhook_url(settings), "--token-file", str(layout.token_file))
    generated = yaml.safe_load(path.read_text())
    timings = ("group_wait", "group_interval", "repeat_interval")
    assert [generated["route"].pop(key) for key in timings] == ["30s", "5m", "4h"]  # the routing file's
    assert [stack["route"].pop(key) for key in timings] == ["1s", "2s", "4h"]  # the stack settings'
    assert [generated["route"]["routes"][0].pop(key) for key in timings] == ["0s", "10s", "1m"]
    assert [stack["route"]["routes"][0].pop(key) for key in timings] == ["1s", "2s", "1m"]  # watchdog_repeat_interval
    assert stack == generated
