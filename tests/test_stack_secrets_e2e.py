"""No secret in any log at any level: a stack run with every component at debug level (`log_level:
debug`), an on-call file whose person is reached first through a Slack webhook and a JSON hook with a
password and a token (both fail here, so apprise logs what it tried, retries and falls back to the
inbox), a fault drilled through Prometheus and Alertmanager, and a console login. Then every log of the
run directory is searched for each secret the stack was given: none may appear, while the logs show
that those channels were tried at debug level (the search had something to find)."""

from __future__ import annotations

import re

import pytest
import requests

from stack_support import RunningStack, start_stack, wait_for
from vigil.notifier.console.passwords import hash_password

pytestmark = pytest.mark.e2e

PASSWORD = "ana-console-Secret-42"
SLACK_TOKENS = ("T0SECRETAA", "B0SECRETBB", "secretslackpathtokenxyz1")
HOOK_PASSWORD, HOOK_TOKEN, HOOK_PATH = "hookPassw0rdXYZ", "querySecret12345", "pathSecretSegment77"
ONCALL = f"""
people:
  ana:
    password_hash: "{hash_password(PASSWORD)}"
    contacts:
      slack: {{url: "slack://{'/'.join(SLACK_TOKENS)}/#pages"}}
      hook: {{url: "json://bot:{HOOK_PASSWORD}@127.0.0.1:9/{HOOK_PATH}?token={HOOK_TOKEN}", kind: im}}
      phone: {{inbox: true, kind: phone}}
policies:
  main:
    tiers:
      - {{notify: [{{person: ana}}], escalate_after: 1h}}
default_policy: main
"""


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    folder = tmp_path_factory.mktemp("secrets-stack")
    oncall = folder / "oncall.yaml"
    oncall.write_text(ONCALL)
    running = start_stack(folder, nodes=2, gpus=2, node_health=False,
                          settings={"log_level": "debug", "oncall_config": oncall})
    yield running
    assert running.cli("down").returncode == 0


def logs(stack: RunningStack) -> str:
    return "\n".join(path.read_text(errors="replace") for path in sorted((stack.run_dir / "logs").glob("*")))


def test_no_configured_secret_is_written_to_any_log_at_debug_level(stack: RunningStack):
    assert stack.cli("chaos", "inject", "xid79", "--node", "node-1", "--gpu", "0").returncode == 0

    def fell_back_to_the_inbox():
        pages = requests.get(f"{stack.url('notifier')}/api/v1/inbox", headers={'Authorization': f'Bearer {stack.token()}'}, timeout=5).json()["pages"]
        return [p for p in pages if p["recipient"] == "ana" and p["status"] == "firing"]
    wait_for(fell_back_to_the_inbox, "the page on ana's third contact, after two failed ones", timeout=180)

    console = requests.Session()
    login = console.get(f"{stack.url('notifier')}/console/login", timeout=5)
    csrf = re.search(r'name="csrf_token" value="([^"]*)"', login.text).group(1)
    answer = console.post(f"{stack.url('notifier')}/console/login", allow_redirects=False, timeout=10,
                          data={"username": "ana", "password": PASSWORD, "csrf_token": csrf, "next": ""})
    assert answer.status_code == 303

    written = logs(stack)
    secrets = {"webhook token": (stack.run_dir / "secrets" / "webhook-token").read_text().strip(),
               "console password": PASSWORD, "hook password": HOOK_PASSWORD, "hook token": HOOK_TOKEN,
               "hook path": HOOK_PATH, **{f"slack token {n}": token for n, token in enumerate(SLACK_TOKENS)}}
    vapid = (stack.run_dir / "secrets" / "vapid-key.pem").read_text()
    secrets |= {f"VAPID key line {n}": line for n, line in enumerate(vapid.splitlines()) if "-----" not in line}
    leaked = sorted(name for name, secret in secrets.items() if secret in written)
    assert not leaked, f"in the logs of {stack.run_dir / 'logs'}: {leaked}"
    # the search had something to find: debug lines of every component, and both failed channels tried
    assert "level=debug" in written and " DEBUG " in written
    incident = fell_back_to_the_inbox()[0]["incident_id"]
    pages = requests.get(f"{stack.url('notifier')}/api/v1/incidents/{incident}",
                         headers={"Authorization": f"Bearer {stack.token()}"}, timeout=5).json()["pages"]
    assert {p["contact"] for p in pages if p["state"] == "failed"} >= {"slack", "hook"}
    assert "***" in written  # what the mask put where a secret was
