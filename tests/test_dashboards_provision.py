"""`vigil dashboards provision` and `vigil up --grafana-url`: the datasource, the folder and every dashboard
of dashboards/json reach Grafana's HTTP API through grafana-client, idempotently, and every failure is one
clear line. Grafana cannot run here (not in Debian nor on PyPI): the API is a stand-in served on a free
loopback port (tests/grafana_standin.py) that answers like Grafana's and records each request."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from grafana_standin import GrafanaStandIn
from stack_support import VIGIL
from vigil.cli import main
from vigil.common.ports import free_port
from vigil.dashboards.grafana_provision import GrafanaTarget, ProvisionError, grafana_target, provision
from vigil.stack.runstate import ComponentState, StackState

TOKEN = "glsa_provision-test-token-0123456789"
PROMETHEUS = "http://127.0.0.1:19690"
JSON_DIR = Path(__file__).resolve().parents[1] / "dashboards" / "json"
CHECKED_IN = {path.name: json.loads(path.read_text()) for path in sorted(JSON_DIR.glob("*.json"))}


def provision_cli(url: str, *args: str, token: str | None = TOKEN):
    env = {"VIGIL_GRAFANA_TOKEN": token} if token is not None else {"VIGIL_GRAFANA_TOKEN": ""}
    return CliRunner().invoke(main, ["dashboards", "provision", "--grafana-url", url, *args], env=env)


@pytest.fixture
def grafana():
    with GrafanaStandIn(TOKEN) as standin:
        yield standin


def test_provision_puts_the_datasource_the_folder_and_every_dashboard_into_grafana(grafana):
    result = provision_cli(grafana.url, "--prometheus-url", PROMETHEUS)
    assert result.exit_code == 0, result.output
    state = grafana.state
    assert list(state.datasources) == ["vigil-prometheus"]
    source = state.datasources["vigil-prometheus"]
    assert (source["type"], source["url"], source["access"], source["name"]) == (
        "prometheus", PROMETHEUS, "proxy", "vigil Prometheus")
    assert source["isDefault"] is False  # the user's Grafana keeps its default; the panels name the uid
    assert [(f["uid"], f["title"]) for f in state.folders.values()] == [("vigil", "vigil")]
    assert len(CHECKED_IN) >= 8
    assert set(state.dashboards) == {model["uid"] for model in CHECKED_IN.values()}
    for model in CHECKED_IN.values():
        saved = state.dashboards[model["uid"]]
        assert saved["folderUid"] == "vigil"
        assert saved["dashboard"] == {**model, "id": None}  # the checked-in JSON, whole
    saves = [r.body for r in state.requests if r.path == "/api/dashboards/db"]
    assert all(body["overwrite"] is True for body in saves) and len(saves) == len(CHECKED_IN)
    assert all(r.authorization == f"Bearer {TOKEN}" for r in state.requests)
    lines = result.output.splitlines()
    assert "datasource vigil-prometheus (vigil Prometheus): created → http://127.0.0.1:19690" in lines
    assert "folder vigil (vigil): created" in lines
    assert sum(" created → " in line and line.startswith("dashboard ") for line in lines) == len(CHECKED_IN)
    assert lines[-1] == f"fleet dashboard: {grafana.url}/d/vigil-fleet/vigil-fleet-overview"


def test_a_second_run_updates_in_place(grafana):
    assert provision_cli(grafana.url, "--prometheus-url", PROMETHEUS).exit_code == 0
    moved = "http://127.0.0.1:29690"
    result = provision_cli(grafana.url, "--prometheus-url", moved)
    assert result.exit_code == 0, result.output
    state = grafana.state
    assert len(state.datasources) == 1 and state.datasources["vigil-prometheus"]["url"] == moved
    assert len(state.folders) == 1
    assert {uid: saved["version"] for uid, saved in state.dashboards.items()} == {
        model["uid"]: 2 for model in CHECKED_IN.values()}
    assert "datasource vigil-prometheus (vigil Prometheus): updated → http://127.0.0.1:29690" in result.output
    assert "folder vigil (vigil): exists" in result.output
    assert result.output.count(": updated → ") == len(CHECKED_IN) + 1


def test_a_refused_token_is_one_line_and_a_failure_for_the_user():
    """Run as a user would (the installed `vigil`): exit 1, one line, no traceback, nothing saved."""
    with GrafanaStandIn("the-right-token") as grafana:
        result = subprocess.run([VIGIL, "dashboards", "provision", "--grafana-url", grafana.url, "--prometheus-url",
                                 PROMETHEUS], capture_output=True, text=True, timeout=60,
                                env={"PATH": "/usr/bin:/bin", "VIGIL_GRAFANA_TOKEN": "a-wrong-token"})
        assert grafana.state.dashboards == {} and grafana.state.datasources == {}
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        f"Error: Grafana at {grafana.url} refused the API token (401 Unauthorized) while trying to list folders: "
        "check --grafana-token-file or $VIGIL_GRAFANA_TOKEN"]
    assert "a-wrong-token" not in result.stdout + result.stderr


def test_a_viewer_token_is_told_which_role_it_needs():
    with GrafanaStandIn(TOKEN, viewer_tokens={"viewer"}) as grafana:
        result = provision_cli(grafana.url, "--prometheus-url", PROMETHEUS, token="viewer")
    assert result.exit_code == 1
    message = result.output.strip()
    assert message.startswith(f"Error: Grafana at {grafana.url} forbids the token to create datasource "
                              "vigil-prometheus (403 Forbidden: You'll need additional permissions")
    assert "needs the Admin role" in message and "datasources:write" in message and len(message.splitlines()) == 1


def test_an_unreachable_grafana_is_a_clear_error():
    url = f"http://127.0.0.1:{free_port()}"
    result = provision_cli(url, "--prometheus-url", PROMETHEUS)
    assert result.exit_code == 1 and isinstance(result.exception, SystemExit)
    message = result.output.strip()
    assert message.startswith(f"Error: cannot reach Grafana at {url} (") and message.endswith(
        "is it running, and is the URL right?"), message
    assert len(message.splitlines()) == 1


def test_a_grafana_served_under_a_subpath(tmp_path):
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    token_file.chmod(0o600)
    with GrafanaStandIn(TOKEN, subpath="/grafana") as grafana:
        result = provision_cli(grafana.url + "/", "--prometheus-url", PROMETHEUS, "--grafana-token-file",
                               str(token_file), token=None)
        assert result.exit_code == 0, result.output
        assert {r.path for r in grafana.state.requests} >= {"/grafana/api/dashboards/db", "/grafana/api/folders/vigil"}
    assert result.output.splitlines()[-1] == f"fleet dashboard: {grafana.url}/d/vigil-fleet/vigil-fleet-overview"


def test_an_existing_vigil_folder_and_a_file_provisioned_datasource_are_kept():
    with GrafanaStandIn(TOKEN) as grafana:
        grafana.state.folders["abc123"] = {"id": 90, "uid": "abc123", "title": "vigil"}
        grafana.state.datasources["vigil-prometheus"] = {
            "id": 91, "uid": "vigil-prometheus", "name": "vigil Prometheus", "type": "prometheus",
            "url": "http://prometheus:9090", "readOnly": True, "version": 1}
        done = provision(GrafanaTarget(grafana.url, TOKEN), PROMETHEUS)
        assert {saved["folderUid"] for saved in grafana.state.dashboards.values()} == {"abc123"}
        assert grafana.state.datasources["vigil-prometheus"]["url"] == "http://prometheus:9090"
    assert done[0].action.startswith("kept") and done[0].url == "http://prometheus:9090"
    assert (done[1].uid, done[1].action) == ("abc123", "exists")


def test_a_datasource_name_taken_by_another_uid_is_explained():
    with GrafanaStandIn(TOKEN) as grafana:
        grafana.state.datasources["other"] = {"id": 5, "uid": "other", "name": "vigil Prometheus", "version": 1}
        with pytest.raises(ProvisionError) as refused:
            provision(GrafanaTarget(grafana.url, TOKEN), PROMETHEUS)
    assert str(refused.value) == (f"Grafana at {grafana.url} refused to create datasource vigil-prometheus: "
                                  "409 data source with the same name already exists")


def test_something_that_is_not_grafana_is_said_so():
    with GrafanaStandIn(TOKEN, subpath="/grafana") as grafana:  # its root answers 404, not Grafana's API
        result = provision_cli(grafana.url.removesuffix("/grafana"), "--prometheus-url", PROMETHEUS)
    assert result.exit_code == 1
    root = grafana.url.removesuffix("/grafana")
    assert result.output.strip() == (f"Error: {root} does not answer like Grafana's HTTP API (GET /api/folders: "
                                     "404 Not Found); is --grafana-url the Grafana server's root URL?")
    assert grafana.state.requests[-1].method == "GET"  # nothing was written


@pytest.mark.parametrize("url, args, expected", [
    ("http://grafana.example.com:3000", (), "is plain HTTP to another host: the API token would cross the network"),
    ("https://admin:secret@grafana.example.com", (), "must not carry a user or password"),
    ("ftp://grafana.example.com", (), "is not an http:// or https:// URL"),
])
def test_unsafe_or_wrong_urls_are_refused_before_anything_is_sent(url, args, expected):
    result = provision_cli(url, "--prometheus-url", PROMETHEUS, *args)
    assert result.exit_code == 1 and expected in result.output and len(result.output.strip().splitlines()) == 1


def test_the_token_comes_from_a_private_file_or_the_environment(tmp_path):
    with pytest.raises(ProvisionError, match=r"needs an API token: .*--grafana-token-file, or in \$VIGIL_GRAFANA_TOKEN"):
        grafana_target("https://grafana.example.com", environ={})
    shared = tmp_path / "shared-token"
    shared.write_text(TOKEN)
    shared.chmod(0o644)
    with pytest.raises(ProvisionError, match="readable by other users; make it owner-only with: chmod 600"):
        grafana_target("https://grafana.example.com", shared)
    shared.chmod(0o600)
    assert grafana_target("https://grafana.example.com/", shared).token == TOKEN
    assert TOKEN not in repr(grafana_target("https://grafana.example.com/", shared))
    assert grafana_target("http://grafana.example.com", insecure=True, environ={"VIGIL_GRAFANA_TOKEN": "t"}).url == \
        "http://grafana.example.com"
    result = provision_cli("https://grafana.example.com", "--prometheus-url", PROMETHEUS, token=None)
    assert result.exit_code == 1 and "needs an API token" in result.output


def test_without_prometheus_url_the_running_stack_is_needed(tmp_path):
    result = provision_cli("https://grafana.example.com", "--run-dir", str(tmp_path / "none"))
    assert result.exit_code == 1
    assert "no vigil stack is running in" in result.output and result.output.strip().endswith("or give --prometheus-url")


def test_vigil_up_refuses_an_unsafe_grafana_url_before_starting_anything(tmp_path):
    result = CliRunner().invoke(main, ["up", "--run-dir", str(tmp_path / "run"), "--grafana-url", "http://10.1.2.3:3000"],
                                env={"VIGIL_GRAFANA_TOKEN": TOKEN})
    assert result.exit_code == 1 and "is plain HTTP to another host" in result.output
    assert not (tmp_path / "run").exists()


def up_step(grafana_url: str, monkeypatch) -> list[str]:
    """Run `vigil up --grafana-url` with the stack itself replaced by a healthy one: the step the CLI hands
    `run_stack`, called as run_stack calls it once every component is healthy; what it said."""
    import vigil.cli.stack

    said: list[str] = []

    def healthy_stack(settings, gpu_backend, say, health_timeout_s, detached, on_up):
        state = StackState(supervisor_pid=1, port_base=settings.port_base, gpu_backend="sim",
                           components={"prometheus": ComponentState(f"http://127.0.0.1:{settings.port_base}", "")})
        on_up(state, said.append)
        return 0

    monkeypatch.setattr(vigil.cli.stack, "run_stack", healthy_stack)
    result = CliRunner().invoke(main, ["up", "--port-base", "19600", "--scrape-interval", "3s",
                                       "--grafana-url", grafana_url], env={"VIGIL_GRAFANA_TOKEN": TOKEN})
    assert result.exit_code == 0, result.output  # whatever Grafana said, the stack ran on
    return "\n".join(said).splitlines()


def test_vigil_up_provisions_the_stacks_prometheus_once_up(grafana, monkeypatch):
    said = up_step(grafana.url, monkeypatch)
    source = grafana.state.datasources["vigil-prometheus"]
    assert source["url"] == "http://127.0.0.1:19600" and source["jsonData"]["timeInterval"] == "3s"
    assert set(grafana.state.dashboards) == {model["uid"] for model in CHECKED_IN.values()}
    assert said[-1] == f"fleet dashboard: {grafana.url}/d/vigil-fleet/vigil-fleet-overview"


def test_vigil_up_says_a_provisioning_failure_loudly_and_runs_on(monkeypatch):
    with GrafanaStandIn("another-token") as grafana:
        said = up_step(grafana.url, monkeypatch)
    assert said[-2].startswith("!!! GRAFANA PROVISIONING FAILED: Grafana at") and "401 Unauthorized" in said[-2]
    assert said[-1].startswith("!!! the stack keeps running; once fixed: vigil dashboards provision --run-dir ")
