"""`vigil notifier serve` as the stack supervisor and a user run it: clear refusals, then a real server."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest
import requests
from click.testing import CliRunner

from test_notifier_support import AUTH, TOKEN, free_port, payload, wait_for
from vigil.cli import main


def serve_args(run_dir: Path, port: int, **changes) -> list[str]:
    options = {"--listen": f"127.0.0.1:{port}", "--db": f"sqlite:///{run_dir / 'notifier.db'}",
               "--token-file": str(run_dir / "secrets" / "webhook-token"),
               "--oncall-config": str(run_dir / "oncall.yaml"), **changes}
    return ["notifier", "serve"] + [part for key, value in options.items() for part in (key, value)]


@pytest.mark.parametrize("change, content, message", [
    ({"--token-file": "absent"}, None, "cannot read --token-file"),
    ({}, ("secrets/webhook-token", "\n"), "token file is empty"),
    ({}, ("secrets/webhook-token", "short\n"), "shorter than 16 characters"),
    ({}, ("secrets/webhook-token", "aaaaaaaaaaaaaaaaaaaaaaaa\n"), "too predictable"),
    ({}, ("secrets/webhook-token", "passwordpassword\n"), "too predictable"),
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


class Served:
    """`vigil notifier serve` as the supervisor runs it: a child process, stopped with SIGTERM on exit;
    then `returncode` and `output` (stdout and stderr) say how it ended and what it logged."""

    def __init__(self, args: list[str], port: int):
        self.url = f"http://127.0.0.1:{port}"
        self._args = args
        self.output, self.returncode = "", None

    def __enter__(self) -> "Served":
        self._process = subprocess.Popen([sys.executable, "-m", "vigil.cli", *self._args], stdout=subprocess.PIPE,
                                         stderr=subprocess.STDOUT, text=True)
        try:
            wait_for(self._healthy, timeout=30)
        except BaseException:
            self.__exit__()
            raise
        return self

    def _healthy(self) -> bool:
        try:
            return requests.get(self.url + "/healthz", timeout=1).json() == {"ok": True}
        except requests.ConnectionError:
            assert self._process.poll() is None, self._process.stdout.read()
            return False

    def __exit__(self, *exc) -> None:
        self._process.send_signal(signal.SIGTERM)
        self.output, _ = self._process.communicate(timeout=20)
        self.returncode = self._process.returncode

    def page_into_the_inbox(self) -> list[dict]:
        answer = requests.post(self.url + "/api/v1/alerts/alertmanager", json=payload(), headers=AUTH, timeout=5)
        assert answer.json()["incident_id"] == 1
        return wait_for(lambda: requests.get(self.url + "/api/v1/inbox", headers=AUTH, timeout=5).json()["pages"])


def test_serve_as_the_supervisor_starts_it(run_dir):
    port = free_port()
    args = serve_args(run_dir, port, **{"--alertmanager-url": f"http://127.0.0.1:{free_port()}"})
    with Served(args, port) as served:
        pages = served.page_into_the_inbox()
        assert pages[0]["recipient"] == "demo-dri" and pages[0]["status"] == "firing"
    # uvicorn shuts down cleanly, then re-raises SIGTERM so the parent sees how it ended
    assert served.returncode in (0, -signal.SIGTERM), served.output
    assert "Application shutdown complete" in served.output
    assert "reconcile with" in served.output and "skipped" in served.output  # Alertmanager down: logged, tolerated
    assert "readable by other users" not in served.output  # the token file is 0600
    assert "notifier database schema upgraded from" in served.output  # a new database: created by migration


def test_a_token_file_others_can_read_is_served_with_a_loud_warning(run_dir):
    token_file = run_dir / "secrets" / "webhook-token"
    token_file.chmod(0o644)  # what a Kubernetes secret volume gives by default: warn, do not refuse
    port = free_port()
    with Served(serve_args(run_dir, port), port) as served:
        pass
    assert f"WARNING vigil.notifier: --token-file {token_file} is readable by other users (mode 644)" in served.output
    assert f"chmod 600 {token_file}" in served.output


def test_check_oncall_validates_a_file_for_rule_authors(run_dir):
    good = CliRunner().invoke(main, ["notifier", "check-oncall", str(run_dir / "oncall.yaml")])
    assert good.exit_code == 0
    assert "ok: 1 target(s), 1 channel(s), 1 route(s), default demo-dri; no mistakes, no coverage gaps" in good.output
    (run_dir / "bad.yaml").write_text("targets:\n  a:\n    channels: [{type: inbox}]\ndefault: b\n")
    bad = CliRunner().invoke(main, ["notifier", "check-oncall", str(run_dir / "bad.yaml")])
    assert bad.exit_code == 1
    assert f"{run_dir / 'bad.yaml'}:4: default: unknown target 'b'" in bad.output


def test_debug_logs_never_show_the_webhook_token_or_a_password(run_dir):
    port, password = free_port(), "am-password-0123456789"
    am_url = f"http://vigil:{password}@127.0.0.1:{free_port()}"  # down: its URL is logged, with the password
    with Served(serve_args(run_dir, port, **{"--log-level": "debug", "--alertmanager-url": am_url}), port) as served:
        served.page_into_the_inbox()
        wait_for(lambda: requests.get(served.url + "/metrics", timeout=5).text.count(
            'vigil_notifier_deliveries_total{channel="inbox",result="sent"} 1.0'))
    # the page went out (to the inbox, written in-process; apprise's debug log is checked in test_notifier_delivery)
    assert "reconcile with http://vigil:***@127.0.0.1" in served.output  # masked where it was logged
    assert TOKEN not in served.output and password not in served.output


def test_check_oncall_summarizes_a_file_of_people_and_policies():
    example = Path(__file__).parent.parent / "oncall" / "examples" / "contacts.yaml"
    result = CliRunner().invoke(main, ["notifier", "check-oncall", str(example)])
    assert result.exit_code == 0, result.output
    assert ("ok: 9 person(s), 12 contact(s), 2 team(s), 2 schedule(s), 2 policies, 2 route(s), default policy "
            "gpu-infra; no mistakes, no coverage gaps in 4 week(s)") in result.output


def test_check_oncall_finds_the_coverage_gaps_that_oncall_check_finds(tmp_path):
    """A tier covered only in office hours has nobody on call every night, whatever day the check runs:
    both commands name the gap at the tier's line and fail."""
    path = tmp_path / "oncall.yaml"
    path.write_text("""people:
  alice: {contacts: {phone: {inbox: true, kind: phone}}}
schedules:
  office:
    layers:
      - {name: office, rotation: daily, handoff: "2026-11-02T09:00", people: [alice],
         restrict: {days: [mon, tue, wed, thu, fri], start: "09:00", end: "18:00"}}
policies:
  main:
    tiers:
      - {name: DRI, notify: [{schedule: office}], escalate_after: 5m}
default_policy: main
""")
    for command in (["notifier", "check-oncall"], ["oncall", "check"]):
        result = CliRunner().invoke(main, [*command, str(path)])
        assert result.exit_code == 1, (command, result.output)
        assert f"{path}:11: policy main tier 1 (DRI) has nobody on call from" in result.output
        assert "Traceback" not in result.output


def test_incidents_commands_work_against_a_notifier_no_stack_runs(run_dir, tmp_path, monkeypatch):
    """`vigil notifier serve` on its own, as a fleet runs it: `vigil incidents …` reaches it with
    --notifier-url and --token-file (or their environment variables), from a directory with no stack."""
    port = free_port()
    token_file = run_dir / "secrets" / "webhook-token"
    with Served(serve_args(run_dir, port), port) as served:
        served.page_into_the_inbox()
        monkeypatch.chdir(tmp_path)  # no .vigil here
        alone = CliRunner().invoke(main, ["incidents", "list"])
        assert alone.exit_code != 0 and "Traceback" not in alone.output
        remote = ["--notifier-url", served.url, "--token-file", str(token_file)]
        listed = CliRunner().invoke(main, ["incidents", "list", *remote])
        assert listed.exit_code == 0 and "#1" in listed.output, listed.output
        acked = CliRunner().invoke(main, ["incidents", "ack", "1", "--by", "ana", *remote])
        assert acked.exit_code == 0, acked.output
        monkeypatch.setenv("VIGIL_NOTIFIER_URL", served.url)
        monkeypatch.setenv("VIGIL_TOKEN_FILE", str(token_file))
        shown = CliRunner().invoke(main, ["incidents", "show", "1", "--json"])
        assert shown.exit_code == 0 and '"acknowledged_by": "ana"' in shown.output, shown.output
        no_token = CliRunner().invoke(main, ["incidents", "list", "--notifier-url", served.url],
                                      env={"VIGIL_TOKEN_FILE": ""})
        assert no_token.exit_code != 0 and "--token-file" in no_token.output
        wrong = tmp_path / "wrong-token"
        wrong.write_text("not-the-token-of-this-notifier\n")
        refused = CliRunner().invoke(main, ["incidents", "ack", "1", "--by", "ana", "--notifier-url", served.url,
                                            "--token-file", str(wrong)])
        assert refused.exit_code != 0 and "Traceback" not in refused.output
