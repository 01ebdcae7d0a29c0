"""Maintenance windows: the store on SQLite and PostgreSQL, the API with its refusals, and pages held
(recorded on the incident, never sent) by windows made through the API and written in the on-call file."""

from __future__ import annotations


import pytest
import requests
from fastapi.testclient import TestClient

from console_support import csrf_of
from sim_clock import SIM_NOW
from vigil.notifier.app import create_app
from vigil.common.times import rfc3339
from vigil.notifier.store import Store
from vigil.notifier.store.maintenance import Maintenance
from vigil.oncall.loader import parse_oncall
from test_notifier_support import (AUTH, INBOX_ONLY, TOKEN, NotifierServer, alert, free_port, inbox, make_settings,
                                   payload, wait_for)

T0 = SIM_NOW
HOOK = "/api/v1/alerts/alertmanager"


# --- the store ------------------------------------------------------------------------------------
@pytest.fixture
def maintenance(db_url):
    store = Store(db_url)
    yield Maintenance(store.engine)
    store.close()


def test_a_window_matches_labels_only_while_it_lasts(maintenance):
    window = maintenance.create({"node": "node-7"}, T0 + 60, T0 + 3600, "firmware", "alice", T0)
    later = maintenance.create({"node": "node-7", "gpu": "3"}, T0 + 7200, T0 + 9000, None, "bob", T0)
    labels = {"node": "node-7", "gpu": "0", "alertname": "GpuLost"}
    assert maintenance.active_for(labels, T0) is None  # not begun
    assert maintenance.active_for(labels, T0 + 60).id == window.id
    assert maintenance.active_for({"node": "node-8"}, T0 + 60) is None
    assert maintenance.active_for(labels, T0 + 3600) is None  # over
    assert maintenance.active_for(labels, T0 + 8000) is None  # gpu 0 is not gpu 3
    assert maintenance.active_for({**labels, "gpu": "3"}, T0 + 8000).id == later.id
    assert [w.id for w in maintenance.windows(T0 + 100)] == [window.id, later.id]
    assert [w.id for w in maintenance.windows(T0 + 5000)] == [later.id]
    assert [w.id for w in maintenance.windows(T0 + 5000, include_past=True)] == [window.id, later.id]


def test_ending_a_window_stops_it_at_once(maintenance):
    window = maintenance.create({"node": "node-7"}, T0, T0 + 3600, None, "alice", T0)
    ended = maintenance.end(window.id, T0 + 100)
    assert ended.ended_at == T0 + 100 and ended.over_at(T0 + 100) and not ended.active_at(T0 + 100)
    assert maintenance.active_for({"node": "node-7"}, T0 + 100) is None
    assert maintenance.end(window.id, T0 + 200).ended_at == T0 + 100  # over already: unchanged
    assert maintenance.end(999, T0) is None
    assert maintenance.windows(T0 + 100) == []


# --- the API --------------------------------------------------------------------------------------
@pytest.fixture
def client(tmp_path):
    now = [T0]
    app = create_app(make_settings(tmp_path), parse_oncall(INBOX_ONLY), run_worker=False, clock=lambda: now[0])
    with TestClient(app) as test_client:
        test_client.now = now
        yield test_client


def test_windows_are_added_listed_and_ended_through_the_api(client):
    added = client.post("/api/v1/maintenance", json={"match": {"node": "node-7"}, "for": "2h", "reason": "firmware",
                                                     "by": "alice"}, headers=AUTH)
    assert added.status_code == 201, added.text
    window = added.json()
    assert window["match"] == {"node": "node-7"} and window["active"] and window["created_by"] == "alice"
    assert window["starts_at"] == rfc3339(T0) and window["ends_at"] == rfc3339(T0 + 7200)
    planned = client.post("/api/v1/maintenance", json={"match": {"rack": "r1"}, "starts_at": rfc3339(T0 + 86400),
                                                       "ends_at": rfc3339(T0 + 90000), "by": "bob"}, headers=AUTH).json()
    assert not planned["active"]
    listed = client.get("/api/v1/maintenance", headers=AUTH).json()["windows"]
    assert [w["id"] for w in listed] == [window["id"], planned["id"]]
    client.now[0] = T0 + 60
    ended = client.post(f"/api/v1/maintenance/{window['id']}/end", headers=AUTH)
    assert ended.status_code == 200 and ended.json()["ended_at"] == rfc3339(T0 + 60)
    again = client.post(f"/api/v1/maintenance/{window['id']}/end", headers=AUTH)
    assert again.status_code == 409 and "over already" in again.json()["error"]
    assert client.post("/api/v1/maintenance/999/end", headers=AUTH).status_code == 404
    assert [w["id"] for w in client.get("/api/v1/maintenance", headers=AUTH).json()["windows"]] == [planned["id"]]
    everything = client.get("/api/v1/maintenance?all=true", headers=AUTH).json()["windows"]
    assert [w["id"] for w in everything] == [window["id"], planned["id"]]


@pytest.mark.parametrize("body, reason", [
    ({"match": {}, "for": "1h", "by": "a"}, "match: Dictionary should have at least 1 item"),
    ({"match": {"node": "n"}, "by": "a"}, "exactly one of `ends_at` (a time) and `for`"),
    ({"match": {"node": "n"}, "for": "1h", "ends_at": "2030-01-01T00:00:00Z", "by": "a"}, "exactly one"),
    ({"match": {"node": "n"}, "for": "soon", "by": "a"}, "'soon' is not a duration"),
    ({"match": {"node": "n"}, "for": 0, "by": "a"}, "must be above zero"),
    ({"match": {"node": "n"}, "for": "400d", "by": "a"}, "at most a year"),
    ({"match": {"node": "n"}, "ends_at": "2020-01-01T00:00:00Z", "by": "a"}, "`ends_at` is in the past"),
    ({"match": {"node": "n"}, "starts_at": "2031-01-01T00:00:00Z", "ends_at": "2030-01-01T00:00:00Z", "by": "a"},
     "`ends_at` must be after `starts_at`"),
    ({"match": {"node": "n"}, "ends_at": "2030-01-01T00:00:00", "by": "a"}, "timezone"),
    ({"match": {"node": "n"}, "starts_at": "0001-01-01T00:00:00+01:00", "for": "1h", "by": "a"}, "in the past"),
    ({"match": {"node": "n"}, "starts_at": "9999-12-31T00:00:00Z", "for": "2d", "by": "a"}, "ends by the end of year 9999"),
    ({"match": {"node": "n"}, "for": True, "by": "a"}, "for: Value error, must be a duration"),
    ({"match": {"node": "n"}, "for": [3600], "by": "a"}, "must be a duration"),
    ({"match": {"node": "n"}, "for": "1h"}, "by: Field required"),
    ({"match": {"node": 7}, "for": "1h", "by": "a"}, "match.node: Input should be a valid string"),
    ({"match": {"node": "n"}, "for": "1h", "by": "a", "until": "x"}, "until: Extra inputs are not permitted"),
])
def test_bad_windows_are_refused_with_a_reason(client, body, reason):
    response = client.post("/api/v1/maintenance", json=body, headers=AUTH)
    assert response.status_code == 422 and reason in response.json()["error"], response.text
    # nothing of it was kept, and the listing still reads (a window shown past year 9999 made it a 500)
    assert client.get("/api/v1/maintenance?all=true", headers=AUTH).json()["windows"] == []


# --- pages held -----------------------------------------------------------------------------------
def incident_pages(server, incident_id) -> list[dict]:
    return requests.get(f"{server.url}/api/v1/incidents/{incident_id}", headers=AUTH, timeout=5).json()["pages"]


def post_alert(server, fingerprint, node) -> int:
    response = requests.post(server.url + HOOK, json=payload(alert(fingerprint, node=node), group_key=node),
                             headers=AUTH, timeout=5)
    response.raise_for_status()
    return response.json()["incident_id"]


def test_pages_of_matching_incidents_are_held_and_recorded_until_the_window_ends(tmp_path):
    with NotifierServer(make_settings(tmp_path, port=free_port())) as server:
        window = requests.post(server.url + "/api/v1/maintenance", json={
            "match": {"node": "node-7"}, "for": "1h", "reason": "firmware", "by": "alice"}, headers=AUTH,
            timeout=5).json()
        held = post_alert(server, "a", "node-7")
        paged = post_alert(server, "b", "node-8")
        wait_for(lambda: [p["state"] for p in incident_pages(server, held)] == ["muted"])
        wait_for(lambda: [p["recipient"] for p in inbox(server)] == ["demo-dri"])
        assert inbox(server)[0]["incident_id"] == paged
        timeline = requests.get(f"{server.url}/api/v1/incidents/{held}", headers=AUTH, timeout=5).json()["timeline"]
        [event] = [e for e in timeline if e["kind"] == "page_held"]
        assert event["detail"]["window"] == window["id"] and event["detail"]["why"] == "firmware"
        assert event["detail"]["by"] == "alice"

        requests.post(f"{server.url}/api/v1/maintenance/{window['id']}/end", headers=AUTH, timeout=5).raise_for_status()
        again = post_alert(server, "c", "node-9")
        requests.post(server.url + HOOK, json=payload(alert("a2", node="node-7"), alert("a", node="node-7"),
                                                      group_key="node-7"), headers=AUTH, timeout=5)
        wait_for(lambda: {p["incident_id"] for p in inbox(server)} >= {paged, again, held})


def test_a_window_in_the_on_call_file_holds_pages_too(tmp_path):
    oncall = INBOX_ONLY + """
maintenance:
  - {match: {node: node-7}, start: "2020-01-01T00:00Z", end: "2100-01-01T00:00Z", reason: decommissioned}
"""
    with NotifierServer(make_settings(tmp_path, port=free_port()), oncall) as server:
        held = post_alert(server, "a", "node-7")
        wait_for(lambda: [p["state"] for p in incident_pages(server, held)] == ["muted"])
        timeline = requests.get(f"{server.url}/api/v1/incidents/{held}", headers=AUTH, timeout=5).json()["timeline"]
        [event] = [e for e in timeline if e["kind"] == "page_held"]
        assert event["detail"]["window"] == "on-call file" and event["detail"]["why"] == "decommissioned"
        assert inbox(server) == []
        [listed] = requests.get(server.url + "/api/v1/maintenance", headers=AUTH, timeout=5).json()["windows"]
        assert listed["source"] == "on-call file" and listed["id"] is None and listed["active"]
        assert listed["match"] == {"node": "node-7"} and listed["ends_at"] == "2100-01-01T00:00:00.000Z"


def test_a_window_of_the_on_call_file_ending_after_year_9999_in_utc_is_listed_as_ending_then(tmp_path):
    """Such a window skips the API's checks; its end in UTC is in year 10000, which no RFC 3339 time can
    write: the listings said 500 for every window, every time."""
    oncall = INBOX_ONLY + """
maintenance:
  - {match: {node: node-7}, start: "2020-01-01T00:00Z", end: "9999-12-31T23:00-05:00", reason: decommissioned}
"""
    with NotifierServer(make_settings(tmp_path, port=free_port()), oncall) as server:
        for path in ("/api/v1/maintenance", "/api/v1/maintenance?all=true"):
            response = requests.get(server.url + path, headers=AUTH, timeout=5)
            assert response.status_code == 200, response.text
            [listed] = response.json()["windows"]
            assert listed["ends_at"] == "9999-12-31T23:59:59.999Z" and listed["active"]
        console = requests.Session()  # logged in as the console's login page says: no user, the API token
        login = console.get(server.url + "/console/login", timeout=5).text
        console.post(server.url + "/console/login", timeout=5,
                     data={"username": "", "password": TOKEN, "csrf_token": csrf_of(login), "next": ""})
        page = console.get(server.url + "/console/maintenance", timeout=5)
        assert page.status_code == 200 and "decommissioned" in page.text
