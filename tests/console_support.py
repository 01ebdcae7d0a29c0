"""Helpers of the console tests (no tests here): an on-call file whose people have console passwords,
a TestClient on the real notifier app with a settable clock, logging in, and reading CSRF tokens."""

from __future__ import annotations

import re

from argon2 import PasswordHasher
from fastapi.testclient import TestClient

from vigil.notifier.app import create_app
from vigil.oncall.loader import parse_oncall
from sim_clock import FakeClock
from test_notifier_support import AUTH, alert, make_settings, payload

HOOK = "/api/v1/alerts/alertmanager"
PASSWORDS = {"alice": "alice-password-1", "bob": "bob-password-2"}
# cheap Argon2id parameters keep the tests fast; the console checks any Argon2id hash with its own parameters
_HASHES = {name: PasswordHasher(time_cost=1, memory_cost=1024, parallelism=1).hash(password)
           for name, password in PASSWORDS.items()}
CSRF = re.compile(r'name="csrf_token" value="([^"]*)"')


def oncall_text() -> str:
    return f"""
priorities:
  P1: {{ack_within: 5m, resolve_within: 1h}}
  P3: {{ack_within: 1h, resolve_within: 1d}}
severities: {{critical: P1, warning: P3, info: P5}}
people:
  alice:
    password_hash: "{_HASHES['alice']}"
    contacts:
      phone: {{inbox: true, kind: phone}}
  bob:
    password_hash: "{_HASHES['bob']}"
    contacts:
      phone: {{inbox: true, kind: phone}}
  carol:
    contacts:
      phone: {{inbox: true, kind: phone}}
teams:
  gpu: {{policy: main, members: [alice, bob]}}
policies:
  main:
    tiers:
      - {{notify: [{{person: alice}}], escalate_after: 5m}}
      - {{notify: [{{person: bob}}], escalate_after: 5m}}
default_policy: main
"""


def console_client(tmp_path, clock: FakeClock, run_worker: bool = False, base_url: str = "http://testserver",
                   **settings) -> TestClient:
    app = create_app(make_settings(tmp_path, **settings), parse_oncall(oncall_text()), run_worker=run_worker,
                     clock=clock)
    return TestClient(app, follow_redirects=False, base_url=base_url)


def csrf_of(html: str) -> str:
    found = CSRF.search(html)
    assert found, "no CSRF field in the page"
    return found.group(1)


def log_in(client: TestClient, username: str = "alice", password: str | None = None, next: str = ""):
    page = client.get("/console/login", params={"next": next} if next else None)
    return client.post("/console/login", data={"username": username, "csrf_token": csrf_of(page.text),
                                               "password": PASSWORDS.get(username, "") if password is None else password,
                                               "next": next})


def open_incident(client: TestClient, **labels) -> int:
    answer = client.post(HOOK, json=payload(alert(**labels)), headers=AUTH)
    assert answer.status_code == 200, answer.text
    listed = client.get("/api/v1/incidents", headers=AUTH).json()["incidents"]
    return listed[-1]["id"]
