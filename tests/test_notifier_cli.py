"""`vigil notifier serve` as the stack supervisor and a user run it: clear refusals, then a real server."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest
import requests
from click.testing import CliRunner

from test_notifier_support import AUTH, INBOX_ONLY, TOKEN, free_port, payload, wait_for
from vigil.cli import main


@pytest.fixture
def run_dir(tmp_path) -> Path:
    (tmp_path / "secrets").mkdir()
    (tmp_path / "secrets" / "webhook-token").write_text(TOKEN + "\n")
    (tmp_path / "oncall.yaml").write_text(INBOX_ONLY)
    return tmp_path


def serve_args(run_dir: Path, port: int, **changes) -> list[str]:
    options = {"--listen": f"127.0.0.1:{port}", "--db": f"sqlite:///{run_dir / 'notifier.db'}",
               "--token-file": str(run_dir / "secrets" / "webhook-token"),
               "--oncall-config": str(run_dir / "oncall.yaml"), **changes}
    return ["notifier", "serve"] + [part for key, value in options.items() for part in (key, value)]


@pytest.mark.parametrize("change, content, message", [
    ({"--token-file": "absent"}, None, "cannot read --token-file"),
    ({}, ("secrets/webhook-token", "\n"), "token file is empty"),
    ({}, ("secrets/webhook-token", "short\n"), "shorter than 16 characters"),
    ({}, ("oncall.yaml", "targets:\n  a:\n    channels: [{type: fax}]\n"), "oncall.yaml:3: targets.a.channels.0"),
    ({"--listen": "9095"}, None, "expected HOST:PORT"),
    ({"--db": "mysql://x"}, None, "--db must be sqlite:///PATH or postgresql://"),
    ({"--db": "sqlite:////nonexistent-dir/n.db"}, None, "cannot open --db sqlite:////nonexistent-dir/n.db"),
    ({"--alertmanager-url": "127.0.0.1:9093"}, None, "alertmanager_url: must be an http:// or https:// URL"),
])
def test_bad_settings_are_refused_with_a_clear_message(run_dir, change, content, message):
    if content:
        (run_dir / content[0]).write_text(content[1])
    result = CliRunner().invoke(main, serve_args(run_dir, 9, **change))
    assert result.exit_code != 0
    assert message in result.output
    assert "Traceback" not in result.output


def test_serve_as_the_supervisor_starts_it(run_dir):
    port = free_port()
    args = serve_args(run_dir, port, **{"--alertmanager-url": f"http://127.0.0.1:{free_port()}"})
    process = subprocess.Popen([sys.executable, "-m", "vigil.cli", *args], stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True)
    url = f"http://127.0.0.1:{port}"
    try:
        def healthy():
            try:
                return requests.get(url + "/healthz", timeout=1).json() == {"ok": True}
            except requests.ConnectionError:
                assert process.poll() is None, process.stdout.read()
                return False
        wait_for(healthy, timeout=30)
        answer = requests.post(url + "/api/v1/alerts/alertmanager", json=payload(), headers=AUTH, timeout=5)
        assert answer.json()["incident_id"] == 1
        pages = wait_for(lambda: requests.get(url + "/api/v1/inbox", headers=AUTH, timeout=5).json()["pages"])
        assert pages[0]["recipient"] == "demo-dri" and pages[0]["status"] == "firing"
    finally:
        process.send_signal(signal.SIGTERM)
        output, _ = process.communicate(timeout=20)
    # uvicorn shuts down cleanly, then re-raises SIGTERM so the parent sees how it ended
    assert process.returncode in (0, -signal.SIGTERM), output
    assert "Application shutdown complete" in output
    assert "reconcile with" in output and "skipped" in output  # Alertmanager was down: logged, tolerated


def test_check_oncall_validates_a_file_for_rule_authors(run_dir):
    good = CliRunner().invoke(main, ["notifier", "check-oncall", str(run_dir / "oncall.yaml")])
    assert good.exit_code == 0
    assert good.output.endswith("ok: 1 target(s), 1 channel(s), 1 route(s), default demo-dri\n")
    (run_dir / "bad.yaml").write_text("targets:\n  a:\n    channels: [{type: inbox}]\ndefault: b\n")
    bad = CliRunner().invoke(main, ["notifier", "check-oncall", str(run_dir / "bad.yaml")])
    assert bad.exit_code == 1
    assert f"{run_dir / 'bad.yaml'}:4: default: unknown target 'b'" in bad.output
