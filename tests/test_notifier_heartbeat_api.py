"""`POST /api/v1/heartbeat/{name}` and `GET /api/v1/heartbeats` on a real uvicorn, with the app's clock
held by the test: Alertmanager's Watchdog notification and an empty body are beats, a resolved one is
not, bad requests get a 4xx and record nothing, and the metrics show the heartbeat."""

from __future__ import annotations

import json

import pytest
import requests

from sim_clock import SIM_NOW
from vigil.notifier.heartbeat_spec import parse_heartbeat
from vigil.common.times import rfc3339
from test_notifier_support import AUTH, NotifierServer, alert, free_port, make_settings, payload, wait_for

START = SIM_NOW
URL = "/api/v1/heartbeat/watchdog"


def watchdog(status: str = "firing") -> dict:
    return payload(alert("wd", status=status, alertname="Watchdog", severity="info"),
                   group_key='{}/{alertname="Watchdog"}:{}')


@pytest.fixture
def server(tmp_path):
    clock = [START]
    settings = make_settings(tmp_path, port=free_port(), heartbeats=(parse_heartbeat("watchdog=1m,team=platform"),))
    with NotifierServer(settings, clock=lambda: clock[0]) as running:
        running.clock = clock
        yield running


def heartbeats(server) -> dict:
    listed = requests.get(server.url + "/api/v1/heartbeats", headers=AUTH, timeout=5).json()["heartbeats"]
    return {h["name"]: h for h in listed}


def test_the_watchdogs_notification_is_a_beat_and_a_resolved_one_is_not(server):
    assert heartbeats(server)["watchdog"]["state"] == "waiting"
    server.clock[0] = START + 20
    response = requests.post(server.url + URL, json=watchdog(), headers=AUTH, timeout=5)
    assert response.status_code == 200, response.text
    assert response.json() == {"status": "heard", "name": "watchdog", "last_seen_at": rfc3339(START + 20),
                               "resolved_incident_id": None}
    server.clock[0] = START + 30
    ignored = requests.post(server.url + URL, json=watchdog("resolved"), headers=AUTH, timeout=5)
    assert ignored.status_code == 200 and ignored.json()["status"] == "ignored"
    shown = heartbeats(server)["watchdog"]
    assert (shown["state"], shown["beats"], shown["last_seen_at"]) == ("alive", 1, rfc3339(START + 20))
    assert shown["deadline"] == rfc3339(START + 80) and shown["labels"]["team"] == "platform"
    metrics = requests.get(server.url + "/metrics", timeout=5).text
    [seen] = [line for line in metrics.splitlines() if line.startswith("vigil_notifier_heartbeat_last_seen_timestamp")]
    assert seen.startswith('vigil_notifier_heartbeat_last_seen_timestamp_seconds{name="watchdog"} ')
    assert float(seen.split()[-1]) == START + 20
    assert 'vigil_notifier_heartbeat_missing{name="watchdog"} 0.0' in metrics
    assert 'vigil_notifier_heartbeat_timeout_seconds{name="watchdog"} 60.0' in metrics


def test_silence_past_the_timeout_opens_the_incident_and_an_empty_beat_resolves_it(server):
    requests.post(server.url + URL, headers=AUTH, timeout=5).raise_for_status()  # a dead-man's switch: no body
    server.clock[0] = START + 61  # the monitor's thread runs on the app's clock

    def incident():
        return heartbeats(server)["watchdog"]["incident_id"]

    incident_id = wait_for(incident, timeout=10)
    shown = requests.get(f"{server.url}/api/v1/incidents/{incident_id}", headers=AUTH, timeout=5).json()
    assert shown["labels"]["alertname"] == "HeartbeatMissing" and shown["state"] == "triggered"
    assert 'vigil_notifier_heartbeat_missing{name="watchdog"} 1.0' in requests.get(server.url + "/metrics", timeout=5).text
    beat = requests.post(server.url + URL, data=b"", headers=AUTH, timeout=5).json()
    assert beat["resolved_incident_id"] == incident_id
    assert heartbeats(server)["watchdog"]["state"] == "alive"


@pytest.mark.parametrize("path, body, headers, status, says", [
    (URL, watchdog(), {}, 401, "bearer token"),
    ("/api/v1/heartbeat/nobody", watchdog(), AUTH, 404, "unknown heartbeat 'nobody'; watched: watchdog"),
    (URL, "{not json", AUTH, 400, "JSON"),
    (URL, {"version": "4", "status": "firing"}, AUTH, 422, "groupKey"),
    (URL, "<ping/>", {**AUTH, "Content-Type": "text/xml"}, 415, "application/json"),
])
def test_bad_requests_get_a_4xx_and_count_no_beat(server, path, body, headers, status, says):
    data = body if isinstance(body, str) else json.dumps(body)
    response = requests.post(server.url + path, data=data, timeout=5,
                             headers={"Content-Type": "application/json", **headers})
    assert response.status_code == status and says in response.json()["error"], response.text
    assert heartbeats(server)["watchdog"]["beats"] == 0
