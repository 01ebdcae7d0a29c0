"""The on-call engine in real `vigil notifier serve` processes on the real clock: pending escalations
survive a SIGKILL and fire on time after the restart, and two notifiers on one PostgreSQL (like two HA
Alertmanager peers posting the same notification) open one incident and page each contact once."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest
import requests
import sqlalchemy as sa

from vigil.notifier.store import engine_for
from stack_support import VIGIL
from test_notifier_support import AUTH, TOKEN, alert, free_port, payload, wait_for

HOOK = "/api/v1/alerts/alertmanager"
WAIT_S = 4
ONCALL = f"""
people:
  alice: {{contacts: {{phone: {{inbox: true, kind: phone}}}}}}
  bob:   {{contacts: {{phone: {{inbox: true, kind: phone}}, sms: {{inbox: true, kind: sms}}}},
          notify: [{{steps: [{{contact: phone}}, {{contact: sms}}]}}]}}
policies:
  rota:
    tiers:
      - {{name: DRI, notify: [{{person: alice}}], escalate_after: {WAIT_S}s}}
      - {{name: senior, notify: [{{person: bob}}], escalate_after: 1h}}
default_policy: rota
"""


class Notifier:
    """`vigil notifier serve` as a user runs it."""

    def __init__(self, tmp_path: Path, db: str):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        token, oncall = tmp_path / "token", tmp_path / "oncall.yaml"
        token.write_text(TOKEN + "\n")
        os.chmod(token, 0o600)
        oncall.write_text(ONCALL)
        self.process = subprocess.Popen(
            [VIGIL, "notifier", "serve", "--listen", f"127.0.0.1:{self.port}", "--db", db, "--token-file",
             str(token), "--oncall-config", str(oncall), "--log-level", "warning"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        wait_for(self._healthy, timeout=30)

    def _healthy(self) -> bool:
        if self.process.poll() is not None:
            raise AssertionError(f"notifier exited: {self.process.stderr.read()[-2000:]}")
        try:
            return requests.get(self.url + "/healthz", timeout=1).status_code == 200
        except requests.ConnectionError:
            return False

    def post(self, body: dict) -> dict:
        response = requests.post(self.url + HOOK, json=body, headers=AUTH, timeout=10)
        response.raise_for_status()
        return response.json()

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(10)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.process.kill()


def pages(db: str) -> list[tuple]:
    """(incident, person, contact, tier, created_at) of every firing page."""
    engine = engine_for(db)
    try:
        with engine.connect() as conn:
            return [tuple(r) for r in conn.execute(sa.text(
                "SELECT incident_id, target, contact, tier, created_at FROM deliveries "
                "WHERE page_status = 'firing' ORDER BY id"))]
    finally:
        engine.dispose()


def test_pending_escalations_fire_on_time_after_a_sigkill_and_restart(db_url, tmp_path):
    first = Notifier(tmp_path, db_url)
    try:
        for group in ("g1", "g2", "g3"):
            first.post(payload(alert(group), group_key=group))
    finally:
        first.kill()
    opened = {incident: created for incident, person, _, tier, created in pages(db_url) if tier == 0}
    assert len(opened) == 3
    second = Notifier(tmp_path, db_url)
    # a step that fell due while no notifier ran fires when the new one is ready, not later
    ready_at = time.time()
    try:
        senior = wait_for(lambda: (found := [p for p in pages(db_url) if p[3] == 1]) and len(found) == 6 and found,
                          timeout=WAIT_S + 15)
    finally:
        second.stop()
    for incident, person, contact, tier, created in senior:
        assert person == "bob"
        due = opened[incident] + WAIT_S
        assert created >= due - 0.05, ("paged before its escalation was due", incident, created - due)
        assert created - max(due, ready_at) < 1.0, ("paged late", incident, created - due, ready_at - due)


def test_two_notifiers_on_one_postgresql_open_one_incident_and_page_once(postgres_server, tmp_path):
    db = f"{postgres_server}/postgres"
    notifiers = [Notifier(tmp_path, db) for _ in range(2)]
    try:
        body = payload(alert("ha-1"), group_key="ha-group")
        answers = []
        threads = [threading.Thread(target=lambda n=n: answers.append(n.post(body))) for n in notifiers]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert len({a["incident_id"] for a in answers}) == 1
        assert sorted(a["duplicate"] for a in answers) == [False, True]
        found = wait_for(lambda: (p := [x for x in pages(db) if x[3] == 1]) and len(p) >= 2 and pages(db),
                         timeout=WAIT_S + 15)
    finally:
        for notifier in notifiers:
            notifier.stop()
    incident = answers[0]["incident_id"]
    assert sorted((person, contact, tier) for i, person, contact, tier, _ in found if i == incident) == [
        ("alice", "phone", 0), ("bob", "phone", 1), ("bob", "sms", 1)]
