"""Incidents whose alerts a real Alertmanager no longer holds are resolved after the grace period, on the
app's fake clock (`notifier/reconcile_resolve.py`): the `vigil down` / `vigil up` case, where the alert
resolved while nothing ran and no resolved notification will ever come."""

from __future__ import annotations

import json
import shutil
import threading
import time
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import requests

from test_notifier_alertmanager import ALERTMANAGER, HOOK, LABELS, Alertmanager, get
from test_notifier_support import AUTH, NotifierServer, alert, free_port, make_settings, payload, wait_for
from vigil.cli.notifier import serve as serve_command
from vigil.stack.components import GpuBackend, component_specs
from vigil.notifier.heartbeat_spec import parse_heartbeat
from vigil.notifier.reconcile_resolve import ACTOR
from vigil.stack.settings import load_settings
from vigil.stack.config import RunLayout

pytestmark = [pytest.mark.e2e,
              pytest.mark.skipif(not shutil.which(ALERTMANAGER), reason="prometheus-alertmanager not installed")]

GRACE_S = 600.0


def serve(tmp_path, port: int, alertmanager_url: str, start: float, **overrides) -> NotifierServer:
    """The notifier on a fake clock starting at `start`, asking `alertmanager_url` every 50 ms of real time.

    Enter it before the Alertmanager that posts to it (`Alertmanager(...)` only picks its own port): a
    port from `free_port()` is free only when picked, and while Alertmanager took a second to be ready,
    another test's process took the notifier's once ("address already in use", CI 2026-11-25)."""
    clock = [start]
    settings = make_settings(tmp_path, port=port, alertmanager_url=alertmanager_url, resolve_gone_after_s=GRACE_S,
                             resolve_gone_check_s=0.05, **overrides)
    server = NotifierServer(settings, clock=lambda: clock[0])
    server.clock = clock
    return server


def pass_at(server: NotifierServer, at: float):
    """Move the app's clock to `at` and wait for a pass of the resolver's thread that began after this call;
    returns the newest pass (an earlier one at `at` may have resolved what it finds resolved)."""
    server.clock[0] = at
    resolver = server._server.config.app.state.gone_alerts
    before = resolver.last_pass
    running = wait_for(lambda: resolver.last_pass is not before and resolver.last_pass, timeout=10)
    return wait_for(lambda: (done := resolver.last_pass) is not running and done.at == at and done, timeout=10)


def open_by_webhook(server: NotifierServer, *fingerprints: str) -> dict:
    """An incident for alerts Alertmanager never held (its firing notification came before `vigil down`)."""
    alerts = [alert(fingerprint=f, starts="2026-11-24T20:00:00Z", gpu=str(i))
              for i, f in enumerate(fingerprints or ["5f2a9c0e1d3b4a67"])]
    requests.post(server.url + HOOK, json=payload(*alerts), headers=AUTH, timeout=5).raise_for_status()
    [incident] = get(server, "incidents")
    assert incident["state"] == "triggered"
    return incident


def incident(server: NotifierServer, incident_id: int) -> dict:
    response = requests.get(f"{server.url}/api/v1/incidents/{incident_id}", headers=AUTH, timeout=5)
    response.raise_for_status()
    return response.json()


def alertmanager_started(am: Alertmanager) -> float:
    uptime = requests.get(am.url + "/api/v2/status", timeout=5).json()["uptime"]
    return datetime.fromisoformat(uptime.replace("Z", "+00:00")).timestamp()


def test_an_incident_alertmanager_forgot_is_resolved_after_the_grace_period(tmp_path):
    port, start = free_port(), time.time() + 60  # the stack's Alertmanager has been up a minute
    am = Alertmanager(tmp_path, port)
    with serve(tmp_path, port, am.url, start) as server, am:
        opened = open_by_webhook(server)
        wait_for(lambda: get(server, "inbox"))
        assert pass_at(server, start).resolved == ()  # seen gone from now on
        before = pass_at(server, start + GRACE_S - 1)
        assert before.resolved == () and before.skipped is None
        assert incident(server, opened["id"])["state"] == "triggered"

        pass_at(server, start + GRACE_S)
        found = incident(server, opened["id"])
        assert found["state"] == "resolved" and found["resolved_by"] == ACTOR
        [resolved] = [e for e in found["timeline"] if e["kind"] == "resolved"]
        assert resolved["actor"] == ACTOR
        assert "gone from Alertmanager for 10m" in resolved["detail"]["reason"]
        # whoever was paged hears of it, as after any resolution
        pages = wait_for(lambda: (p := get(server, "inbox")) and len(p) >= 2 and p)
        assert [p["status"] for p in pages] == ["firing", "resolved"]
        pass_at(server, start + 1 + 2 * GRACE_S)
        assert [e["kind"] for e in incident(server, opened["id"])["timeline"]].count("resolved") == 1
        # counted where an SRE looks for it: the notifier's /metrics
        scraped = requests.get(server.url + "/metrics", timeout=5).text
        assert "vigil_notifier_incidents_resolved_gone_total 1.0" in scraped.splitlines()


def test_an_alert_alertmanager_holds_keeps_its_incident_open(tmp_path):
    port, start = free_port(), time.time() + 60
    am = Alertmanager(tmp_path, port)
    with serve(tmp_path, port, am.url, start) as server, am:
        am.post_alert(LABELS)  # Alertmanager notifies the notifier, which opens the incident
        [opened] = wait_for(lambda: get(server, "incidents"), timeout=20)
        assert pass_at(server, start).resolved == ()
        after = pass_at(server, start + 1 + GRACE_S)
        assert after.resolved == () and after.skipped is None
        assert incident(server, opened["id"])["state"] == "triggered"


def test_a_notification_after_the_alerts_were_seen_gone_starts_the_grace_period_again(tmp_path):
    port, start = free_port(), time.time() + 60
    am = Alertmanager(tmp_path, port)
    with serve(tmp_path, port, am.url, start) as server, am:
        opened = open_by_webhook(server)
        pass_at(server, start)
        server.clock[0] = start + GRACE_S / 2  # a notification for the group: Alertmanager held it then
        assert open_by_webhook(server, "5f2a9c0e1d3b4a67", "0c1d2e3f4a5b6c7d")["id"] == opened["id"]
        pass_at(server, start + GRACE_S / 2)
        pass_at(server, start + GRACE_S + 1)
        assert incident(server, opened["id"])["state"] == "triggered"
        pass_at(server, start + GRACE_S / 2 + GRACE_S)
        assert incident(server, opened["id"])["state"] == "resolved"


def test_nothing_is_resolved_while_alertmanager_cannot_be_read(tmp_path):
    port, start = free_port(), time.time() + 60
    am = Alertmanager(tmp_path, port)
    with serve(tmp_path, port, am.url, start) as server, am:
        opened = open_by_webhook(server)
        assert pass_at(server, start).resolved == ()  # read: the alerts are gone
        am._process.terminate()  # Alertmanager stops
        am._process.wait(10)
        after = pass_at(server, start + 2 + GRACE_S)
        assert after.resolved == () and after.skipped.startswith("Alertmanager unreadable")
        assert incident(server, opened["id"])["state"] == "triggered"


class _NoUptime(BaseHTTPRequestHandler):
    """An Alertmanager whose status gives an empty uptime, holding no alert."""

    def do_GET(self):
        body = json.dumps({"uptime": ""} if self.path.startswith("/api/v2/status") else []).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def test_a_status_without_an_uptime_is_unreadable_and_resolves_nothing(tmp_path):
    fake = ThreadingHTTPServer(("127.0.0.1", 0), _NoUptime)
    threading.Thread(target=fake.serve_forever, daemon=True).start()
    start = time.time() + 60
    try:
        with serve(tmp_path, free_port(), f"http://127.0.0.1:{fake.server_port}", start) as server:
            opened = open_by_webhook(server)
            after = pass_at(server, start + 2 * GRACE_S)
            assert after.resolved == () and after.skipped == "Alertmanager unreadable: ValueError"
            assert incident(server, opened["id"])["state"] == "triggered"
    finally:
        fake.shutdown()


def test_a_freshly_started_alertmanager_resolves_nothing_until_it_was_up_for_the_grace_period(tmp_path):
    port = free_port()
    start = time.time() - GRACE_S  # the notifier saw the alerts gone long before this Alertmanager started
    am = Alertmanager(tmp_path, port)
    with serve(tmp_path, port, am.url, start) as server, am:
        opened = open_by_webhook(server)
        pass_at(server, start)
        am_started = alertmanager_started(am)
        young = pass_at(server, am_started + 60)  # gone for more than the grace period, Alertmanager up 1m
        assert young.resolved == () and young.skipped == "Alertmanager up for less than the grace period"
        assert incident(server, opened["id"])["state"] == "triggered"
        pass_at(server, am_started + GRACE_S + 1)
        assert incident(server, opened["id"])["resolved_by"] == ACTOR


def test_a_missing_heartbeat_is_not_alertmanager_s_and_stays_open(tmp_path):
    port, start = free_port(), time.time() + 60
    am = Alertmanager(tmp_path, port)
    with serve(tmp_path, port, am.url, start, heartbeats=(parse_heartbeat("watchdog=1m"),)) as server, am:
        pass_at(server, start)  # the heartbeat monitor starts watching
        server.clock[0] = start + 61
        [missing] = wait_for(lambda: get(server, "incidents"))
        assert missing["title"].startswith("HeartbeatMissing")
        pass_at(server, start + 61)  # its alert is not Alertmanager's: no more "gone" than ever
        after = pass_at(server, start + 61 + GRACE_S)
        assert after.resolved == () and after.skipped is None
        assert incident(server, missing["id"])["state"] == "triggered"


def test_vigil_up_passes_the_stack_s_resolve_gone_after_to_its_notifier(tmp_path):
    settings = load_settings(None, {"sim_nodes": 1, "resolve_gone_after": "15m"})
    binaries = {name: f"/usr/bin/{name}" for name in ("prometheus", "alertmanager", "node-exporter")}
    [notifier] = [s for s in component_specs(settings, RunLayout(tmp_path), binaries, GpuBackend("sim", ["node-1"]))
                  if s.name == "notifier"]
    args = notifier.argv[notifier.argv.index("serve") + 1:]
    assert args[args.index("--resolve-gone-after") + 1] == "15m"
    assert serve_command.make_context("serve", args).params["resolve_gone_after_s"] == 900.0
    assert load_settings(None, {}).resolve_gone_after == GRACE_S  # the default: 10 minutes
