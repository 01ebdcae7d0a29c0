"""The files `vigil up` generates pass the real tools' own checks, and bad input is refused early."""

from __future__ import annotations

import subprocess

import yaml

from stack_support import vigil
from vigil.settings import load_settings
from vigil.stack_config import RunLayout, write_stack_files


def generate(tmp_path, **overrides):
    settings = load_settings(None, {"run_dir": tmp_path / "run", "sim_nodes": 3, **overrides})
    layout = RunLayout(settings.run_path)
    write_stack_files(settings, layout, [f"node-{i}" for i in (1, 2, 3)])
    return settings, layout


def test_generated_prometheus_config_and_rules_pass_promtool(tmp_path):
    settings, layout = generate(tmp_path)
    result = subprocess.run(["promtool", "check", "config", str(layout.prometheus_config)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout + result.stderr
    config = yaml.safe_load(layout.prometheus_config.read_text())
    gpu_job = next(j for j in config["scrape_configs"] if j["job_name"] == "vigil-gpu")
    assert [c["labels"]["node"] for c in gpu_job["static_configs"]] == ["node-1", "node-2", "node-3"]
    assert gpu_job["static_configs"][1]["targets"] == [f"127.0.0.1:{settings.ports.gpu_node(2)}"]


def test_generated_alertmanager_config_passes_amtool_and_keeps_the_token_out(tmp_path):
    _, layout = generate(tmp_path)
    result = subprocess.run(["amtool", "check-config", str(layout.alertmanager_config)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    token = layout.token_file.read_text().strip()
    assert len(token) >= 32 and token not in layout.alertmanager_config.read_text()
    assert layout.token_file.stat().st_mode & 0o077 == 0  # readable by the owner only
    route = yaml.safe_load(layout.alertmanager_config.read_text())["route"]
    assert {r["matchers"][0] for r in route["routes"]} == {'severity="critical"', 'severity="warning"', 'severity="info"'}


def test_token_survives_regeneration(tmp_path):
    _, layout = generate(tmp_path)
    first = layout.token_file.read_text()
    generate(tmp_path)
    assert layout.token_file.read_text() == first  # Alertmanager and the notifier keep agreeing


def test_bad_oncall_config_is_refused_with_file_and_line_before_anything_starts(tmp_path):
    oncall = tmp_path / "oncall.yaml"
    oncall.write_text("targets:\n  dri:\n    name: X\n    channels:\n      - type: carrier-pigeon\nroutes:\n  - match: {severity: critical}\n    notify: nobody\n")
    config = tmp_path / "vigil.yaml"
    config.write_text(f"stack:\n  oncall_config: {oncall}\n")
    result = vigil("up", "--config", str(config), "--run-dir", str(tmp_path / "run"), "--no-aiops")
    assert result.returncode == 1
    assert f"{oncall}:5:" in result.stderr and f"{oncall}:8:" in result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "run" / "state.json").exists()
