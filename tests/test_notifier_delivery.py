"""Pages leave through apprise and arrive: the local inbox, apprise URLs, retries, the outbox."""

from __future__ import annotations

import sqlite3

import apprise
import requests
from fastapi.testclient import TestClient

from vigil.notifier.app import create_app
from vigil.oncall.loader import parse_oncall
from test_notifier_support import (AUTH, INBOX_ONLY, NotifierServer, RecordingEndpoint, alert, free_port,
                                   make_settings, payload, wait_for)

HOOK = "/api/v1/alerts/alertmanager"


def incident_of(received: dict) -> str:
    """`incident #N` of a page's first line (`incident #N · P1`)."""
    return received["message"].split("\n")[0].split(" · ")[0]


def inbox_pages(server) -> list[dict]:
    response = requests.get(server.url + "/api/v1/inbox", headers=AUTH, timeout=5)
    response.raise_for_status()
    return response.json()["pages"]


def test_firing_and_resolved_pages_arrive_in_the_inbox(tmp_path):
    with NotifierServer(make_settings(tmp_path, port=free_port())) as server:
        requests.post(server.url + HOOK, json=payload(alert("a")), headers=AUTH, timeout=5).raise_for_status()
        [page] = wait_for(lambda: inbox_pages(server))
        assert page["status"] == "firing" and page["recipient"] == "demo-dri" and page["channel"] == "inbox"
        assert page["incident_id"] == 1
        assert page["labels"] == {"alertname": "GpuLost", "node": "node-1", "gpu": "0", "severity": "critical"}
        assert page["title"].startswith("[FIRING:1] GpuLost node=node-1 gpu=0")
        assert "GPU fell off the bus" in page["body"]
        assert "alertname=" not in page["title"] + page["body"]  # no raw Alertmanager group key

        requests.post(server.url + HOOK, json=payload(alert("a", status="resolved")), headers=AUTH,
                      timeout=5).raise_for_status()
        pages = wait_for(lambda: (p := inbox_pages(server)) and len(p) == 2 and p)
        assert [p["status"] for p in pages] == ["firing", "resolved"]
        assert pages[1]["title"].startswith("[RESOLVED] GpuLost")
        assert pages[0]["id"] < pages[1]["id"]


def test_inbox_refuses_pages_without_a_token_or_an_outbox_delivery(tmp_path):
    with NotifierServer(make_settings(tmp_path, port=free_port())) as server:
        page = {"version": "1.0", "title": "t", "message": "m", "type": "info", "attachments": []}
        assert requests.post(server.url + "/api/v1/inbox", json=page, timeout=5).status_code == 401
        refused = requests.post(server.url + "/api/v1/inbox", json=page, headers={**AUTH, "X-Vigil-Page": "99"},
                                timeout=5)
        assert refused.status_code == 422 and "99" in refused.json()["error"]
        assert inbox_pages(server) == []


def test_apprise_channel_is_retried_with_backoff_until_it_succeeds(tmp_path):
    with RecordingEndpoint(failures=2) as endpoint:
        oncall = f"""
targets:
  sre:
    channels:
      - type: apprise
        url: "json://127.0.0.1:{endpoint.port}/hook"
default: sre
"""
        with NotifierServer(make_settings(tmp_path, port=free_port()), oncall) as server:
            requests.post(server.url + HOOK, json=payload(), headers=AUTH, timeout=5).raise_for_status()
            [received] = wait_for(lambda: endpoint.received)
            assert received["title"].startswith("[FIRING:1] GpuLost") and received["type"] == "failure"
            sent = 'vigil_notifier_deliveries_total{channel="apprise",result="sent"} 1.0'
            # the endpoint has the page slightly before the worker has heard back and counted it
            metrics = wait_for(lambda: (text := requests.get(server.url + "/metrics", timeout=5).text)
                               and sent in text and text)
        assert 'vigil_notifier_deliveries_total{channel="apprise",result="retry"} 2.0' in metrics
    with sqlite3.connect(tmp_path / "notifier.db") as db:
        attempts = db.execute("SELECT ok, error FROM delivery_attempts ORDER BY id").fetchall()
        state = db.execute("SELECT state, attempts FROM deliveries").fetchall()
    assert [ok for ok, _ in attempts] == [0, 0, 1]
    assert all(error for ok, error in attempts if not ok)  # why it failed is recorded
    assert state == [("sent", 3)]


def test_a_delivery_that_keeps_failing_is_given_up_after_max_attempts(tmp_path):
    with RecordingEndpoint(failures=100) as endpoint:
        oncall = (f'targets:\n  sre:\n    channels:\n      - type: apprise\n'
                  f'        url: "json://127.0.0.1:{endpoint.port}/hook"\ndefault: sre\n')
        settings = make_settings(tmp_path, port=free_port(), max_attempts=3)
        with NotifierServer(settings, oncall):
            requests.post(settings.own_url + HOOK, json=payload(), headers=AUTH, timeout=5).raise_for_status()
            db_path = tmp_path / "notifier.db"
            wait_for(lambda: sqlite3.connect(db_path).execute("SELECT state FROM deliveries").fetchone()
                     == ("failed",))
    with sqlite3.connect(tmp_path / "notifier.db") as db:
        assert db.execute("SELECT count(*) FROM delivery_attempts").fetchone() == (3,)


def test_channel_severity_filter_and_routes_pick_who_is_paged(tmp_path):
    with RecordingEndpoint() as phone, RecordingEndpoint() as chat:
        oncall = f"""
targets:
  gpu-oncall:
    channels:
      - type: apprise
        url: "json://127.0.0.1:{phone.port}/call"
        severities: [critical]
      - type: apprise
        url: "json://127.0.0.1:{chat.port}/chat"
routes:
  - match: {{team: gpu}}
    notify: gpu-oncall
"""
        with NotifierServer(make_settings(tmp_path, port=free_port()), oncall) as server:
            def post(body):
                requests.post(server.url + HOOK, json=body, headers=AUTH, timeout=5).raise_for_status()
            post(payload(alert("c", team="gpu"), group_key="critical"))
            post(payload(alert("w", team="gpu", severity="warning"), group_key="warning"))
            post(payload(alert("x", team="storage"), group_key="unrouted"))  # no route, no default
            wait_for(lambda: len(chat.received) == 2)
            wait_for(lambda: len(phone.received) == 1)
        # the phone (critical only) got the critical page; the chat got both routed ones; storage: nobody
        # incidents: #1 the critical group, #2 the warning one, #3 the unrouted one
        assert [incident_of(p) for p in phone.received] == ["incident #1"]
        assert sorted(incident_of(p) for p in chat.received) == ["incident #1", "incident #2"]
    with sqlite3.connect(tmp_path / "notifier.db") as db:
        assert db.execute("SELECT count(*) FROM incidents").fetchone() == (3,)
        assert db.execute("SELECT count(*) FROM deliveries").fetchone() == (3,)


def test_pages_stored_before_a_crash_are_delivered_after_restart(tmp_path):
    settings = make_settings(tmp_path, port=free_port())
    oncall = parse_oncall(INBOX_ONLY)
    # first life: the webhook is answered 200 (committed), then the process dies before any delivery
    with TestClient(create_app(settings, oncall, run_worker=False)) as crashed:
        assert crashed.post(HOOK, json=payload(), headers=AUTH).status_code == 200
    # second life: the outbox still holds the page, and the worker delivers it
    with NotifierServer(settings) as server:
        [page] = wait_for(lambda: inbox_pages(server))
        assert page["status"] == "firing" and page["incident_id"] == 1


def test_throttle_holds_back_pages_beyond_the_per_minute_limit_and_sends_them_later(tmp_path):
    now = [10_000.0]
    with RecordingEndpoint() as limited, RecordingEndpoint() as default:
        oncall = parse_oncall(f"""
targets:
  sre:
    channels:
      - type: apprise
        url: "json://127.0.0.1:{limited.port}/sms"
        max_per_minute: 2
      - type: apprise
        url: "json://127.0.0.1:{default.port}/chat"
default: sre
""")
        app = create_app(make_settings(tmp_path, max_pages_per_minute=3), oncall, run_worker=False,
                         clock=lambda: now[0])
        with TestClient(app) as client:
            for group in ("g1", "g2", "g3", "g4"):
                client.post(HOOK, json=payload(alert(group), group_key=group), headers=AUTH).raise_for_status()
            worker = app.state.worker
            assert worker.run_once() == 5  # 2 on the channel limited to 2/min, 3 on the default 3/min
            assert (len(limited.received), len(default.received)) == (2, 3)
            now[0] += 30
            assert worker.run_once() == 0  # the held-back pages wait for the window to move on
            now[0] += 31
            assert worker.run_once() == 3  # g3 + g4 on the limited channel, g4 on the other
            assert worker.run_once() == 0
    for endpoint in (limited, default):
        incidents = sorted(incident_of(p) for p in endpoint.received)
        assert incidents == ["incident #1", "incident #2", "incident #3", "incident #4"]  # late, but none dropped


def test_the_local_inbox_is_not_throttled(tmp_path):
    with NotifierServer(make_settings(tmp_path, port=free_port(), max_pages_per_minute=1)) as server:
        for group in ("g1", "g2", "g3"):
            requests.post(server.url + HOOK, json=payload(alert(group), group_key=group), headers=AUTH,
                          timeout=5).raise_for_status()
        wait_for(lambda: len(inbox_pages(server)) == 3, timeout=10)


def test_a_fake_clock_drives_the_retry_schedule_without_sleeping(tmp_path):
    now = [50_000.0]
    with RecordingEndpoint(failures=2) as endpoint:
        oncall = parse_oncall(f'targets:\n  sre:\n    channels:\n      - type: apprise\n'
                              f'        url: "json://127.0.0.1:{endpoint.port}/hook"\ndefault: sre\n')
        settings = make_settings(tmp_path, retry_base_s=10, retry_max_s=15, max_attempts=4)
        app = create_app(settings, oncall, run_worker=False, clock=lambda: now[0])
        with TestClient(app) as client:
            client.post(HOOK, json=payload(), headers=AUTH).raise_for_status()
            worker = app.state.worker
            schedule = []
            # the backoff after the 1st failure is 10 s, after the 2nd 20 s, capped at 15 s
            for step in (0, 9.9, 0.1, 14.9, 0.1, 100):
                now[0] += step
                schedule.append(worker.run_once())
    assert schedule == [1, 0, 1, 0, 1, 0]
    with sqlite3.connect(tmp_path / "notifier.db") as db:
        attempts = db.execute("SELECT at, ok FROM delivery_attempts ORDER BY id").fetchall()
    assert attempts == [(50_000.0, 0), (50_010.0, 0), (50_025.0, 1)]  # the fake clock's times, exactly
    assert len(endpoint.received) == 1


def test_a_firing_page_still_retrying_when_its_incident_resolves_is_muted_and_so_is_its_resolution(tmp_path):
    """As Alertmanager does: a receiver that was never told of the firing is not told of its end."""
    now = [50_000.0]
    with RecordingEndpoint(failures=1) as endpoint:
        oncall = parse_oncall(f'targets:\n  sre:\n    channels:\n      - type: apprise\n'
                              f'        url: "json://127.0.0.1:{endpoint.port}/hook"\ndefault: sre\n')
        app = create_app(make_settings(tmp_path, retry_base_s=5), oncall, run_worker=False, clock=lambda: now[0])
        with TestClient(app) as client:
            client.post(HOOK, json=payload(alert("a")), headers=AUTH).raise_for_status()
            assert app.state.worker.run_once() == 1  # the channel is down: retry in 5 s
            now[0] += 2
            client.post(HOOK, json=payload(alert("a", status="resolved")), headers=AUTH).raise_for_status()
            app.state.worker.run_once()  # the resolved page waits: the firing one may still go out
            now[0] += 3
            app.state.worker.run_once()  # the firing page is muted: its incident resolved
            now[0] += 3
            app.state.worker.run_once()  # the resolved page is muted: nobody heard of the firing
            metrics = client.get("/metrics").text
    assert endpoint.received == []
    assert 'vigil_notifier_outbox_deliveries{state="muted"} 2.0' in metrics
    assert 'vigil_notifier_outbox_deliveries{state="failed"} 0.0' in metrics
    assert 'vigil_notifier_deliveries_total{channel="apprise",result="muted"} 2.0' in metrics
