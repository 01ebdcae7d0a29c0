"""The incidents REST API and the one-click links, as a user's tools and phone drive them: list and
filter, the detail with its timeline, acknowledge / resolve / escalate / notes with their refusals, and
signed links that show a page on GET, act once on POST, and refuse forged, expired and used ones; on
SQLite and on PostgreSQL."""

from __future__ import annotations

import re

import pytest
from fastapi.testclient import TestClient

from vigil.notifier.app import create_app
from vigil.notifier.links import LINK_PATH, link_key, page_links, sign
from vigil.oncall.loader import parse_oncall
from sim_clock import SIM_NOW
from test_notifier_support import AUTH, TOKEN, alert, make_settings, payload

HOOK = "/api/v1/alerts/alertmanager"
T0 = SIM_NOW
ONCALL = """
people:
  alice:
    contacts:
      phone: {inbox: true, kind: phone}
  bob:
    contacts:
      phone: {inbox: true, kind: phone}
teams:
  gpu: {policy: main, members: [alice, bob]}
policies:
  main:
    tiers:
      - {notify: [{person: alice}], escalate_after: 5m}
      - {notify: [{person: bob}], escalate_after: 5m}
    repage_acknowledged_after: 1h
default_policy: main
"""


@pytest.fixture
def client(tmp_path, clock, db_url):
    settings = make_settings(tmp_path, db_url=db_url, public_url="https://vigil.example.com")
    app = create_app(settings, parse_oncall(ONCALL), run_worker=False, clock=clock)
    with TestClient(app) as test_client:
        yield test_client


def open_incident(client, fingerprint="a", severity="critical", group=None) -> int:
    body = payload(alert(fingerprint, severity=severity), group_key=group or f"g-{fingerprint}")
    response = client.post(HOOK, json=body, headers=AUTH)
    assert response.status_code == 200, response.text
    return response.json()["incident_id"]


def act(client, incident_id, verb, **body):
    return client.post(f"/api/v1/incidents/{incident_id}/{verb}", json=body, headers=AUTH)


# --- the REST API ---------------------------------------------------------------------------------
def test_list_filters_by_state_priority_and_team(client):
    first, second = open_incident(client, "a"), open_incident(client, "b", severity="info")
    assert act(client, first, "ack", by="alice").status_code == 200
    listed = client.get("/api/v1/incidents", headers=AUTH).json()["incidents"]
    assert [(i["id"], i["state"], i["priority"], i["team"]) for i in listed] == [
        (first, "acknowledged", "P1", "gpu"), (second, "triggered", "P5", "gpu")]
    assert listed[0]["acknowledged_by"] == "alice" and listed[0]["policy"] == "main"

    def ids(query):
        return [i["id"] for i in client.get(f"/api/v1/incidents?{query}", headers=AUTH).json()["incidents"]]
    assert ids("state=triggered") == [second]
    assert ids("state=acknowledged&priority=P1") == [first]
    assert ids("priority=P2") == [] and ids("team=gpu") == [first, second] and ids("team=other") == []
    for bad in ("state=asleep", "priority=P9", "limit=0"):
        assert client.get(f"/api/v1/incidents?{bad}", headers=AUTH).status_code == 422


def test_the_detail_has_alerts_timeline_and_pages(client, clock):
    incident = open_incident(client)
    clock.now = T0 + 60
    assert act(client, incident, "notes", by="alice", text="reseating the GPU").status_code == 200
    detail = client.get(f"/api/v1/incidents/{incident}", headers=AUTH).json()
    assert detail["id"] == incident and detail["state"] == "triggered"
    assert [(a["status"], a["labels"]["node"], a["summary"]) for a in detail["alerts"]] == [
        ("firing", "node-1", "GPU fell off the bus")]
    kinds = [e["kind"] for e in detail["timeline"]]
    assert kinds[0] == "opened" and kinds[-1] == "note"
    assert detail["timeline"][-1]["actor"] == "alice" and detail["timeline"][-1]["detail"]["text"] == "reseating the GPU"
    assert isinstance(detail["pages"], list)


def test_ack_resolve_and_their_refusals(client, clock):
    incident = open_incident(client)
    acked = act(client, incident, "ack", by="alice")
    assert acked.status_code == 200 and acked.json()["state"] == "acknowledged"
    again = act(client, incident, "ack", by="bob")
    assert again.status_code == 409 and "already acknowledged by alice" in again.json()["error"]
    clock.now = T0 + 120
    resolved = act(client, incident, "resolve", by="alice")
    assert resolved.status_code == 200 and resolved.json()["resolved_by"] == "alice"
    for verb in ("ack", "resolve", "escalate"):
        refused = act(client, incident, verb, by="bob")
        assert refused.status_code == 409 and "resolved" in refused.json()["error"]
    timeline = client.get(f"/api/v1/incidents/{incident}", headers=AUTH).json()["timeline"]
    assert [(e["kind"], e["actor"]) for e in timeline if e["kind"] in ("acknowledged", "resolved")] == [
        ("acknowledged", "alice"), ("resolved", "alice")]


def test_escalating_an_acknowledged_incident_through_the_api_restarts_its_ack_target(tmp_path, clock, db_url):
    settings = make_settings(tmp_path, db_url=db_url)
    app = create_app(settings, parse_oncall("priorities: {P1: {ack_within: 5m}}\n" + ONCALL), run_worker=False,
                     clock=clock)
    with TestClient(app) as client:
        _escalate_after_ack(client, clock)


def _escalate_after_ack(client, clock):
    incident = open_incident(client)
    due = client.get(f"/api/v1/incidents/{incident}", headers=AUTH).json()["ack_due_at"]
    act(client, incident, "ack", by="alice")
    clock.now = T0 + 3600
    escalated = act(client, incident, "escalate", by="alice").json()
    assert escalated["state"] == "triggered" and escalated["sla"]["ack"] == "pending"
    assert due is not None and escalated["ack_due_at"] > due  # counted from the escalation, not the opening


def test_escalate_now_is_on_the_timeline(client):
    incident = open_incident(client)
    response = act(client, incident, "escalate", by="carol")
    assert response.status_code == 200
    timeline = client.get(f"/api/v1/incidents/{incident}", headers=AUTH).json()["timeline"]
    assert ("escalated", "carol") in [(e["kind"], e["actor"]) for e in timeline]


@pytest.mark.parametrize("path, body, status, reason", [
    ("/api/v1/incidents/999", None, 404, "no incident 999"),
    ("/api/v1/incidents/999/ack", {"by": "alice"}, 404, "no incident 999"),
    ("/api/v1/incidents/999/notes", {"by": "alice", "text": "x"}, 404, "no incident 999"),
    ("/api/v1/incidents/{id}/ack", {}, 422, "by: Field required"),
    ("/api/v1/incidents/{id}/ack", {"by": ""}, 422, "by: String should have at least 1 character"),
    ("/api/v1/incidents/{id}/ack", {"by": "a", "extra": 1}, 422, "extra: Extra inputs are not permitted"),
    ("/api/v1/incidents/{id}/ack", [], 422, "Input should be a valid dictionary"),
    ("/api/v1/incidents/{id}/notes", {"by": "alice"}, 422, "text: Field required"),
    ("/api/v1/incidents/{id}/notes", {"by": "alice", "text": "  "}, 422, "text: String should have at least 1"),
])
def test_bad_requests_get_a_4xx_with_a_reason(client, path, body, status, reason):
    incident = open_incident(client)
    url = path.format(id=incident)
    response = client.get(url, headers=AUTH) if body is None else client.post(url, json=body, headers=AUTH)
    assert response.status_code == status and reason in response.json()["error"], response.text


def test_not_json_and_no_token_are_refused(client):
    incident = open_incident(client)
    assert client.post(f"/api/v1/incidents/{incident}/ack", content=b"{", headers=AUTH).status_code == 400
    assert client.post(f"/api/v1/incidents/{incident}/ack", json={"by": "x"}).status_code == 401
    assert client.get(f"/api/v1/incidents/{incident}").status_code == 401


# --- one-click links ------------------------------------------------------------------------------
def link_path(url: str) -> str:
    return url.removeprefix("https://vigil.example.com")


def links_of(client, incident_id, now=T0, ttl_s=3600, person=None) -> dict[str, str]:
    urls = page_links(client.app.state.settings, incident_id, now, ttl_s, person)
    return dict(zip(("ack", "resolve", "open", "noisy"), map(link_path, urls)))


def state_of(client, incident_id) -> str:
    return client.get(f"/api/v1/incidents/{incident_id}", headers=AUTH).json()["state"]


def test_an_ack_link_shows_a_button_on_get_and_acts_once_on_post(client, clock):
    incident = open_incident(client)
    links = links_of(client, incident)
    shown = client.get(links["ack"])
    assert shown.status_code == 200 and "text/html" in shown.headers["content-type"]
    assert '<form method="post">' in shown.text and f"Acknowledge incident #{incident}" in shown.text
    assert shown.headers["x-frame-options"] == "DENY" and shown.headers["cache-control"] == "no-store"
    assert state_of(client, incident) == "triggered"  # a GET (a mail scanner's preview) changes nothing
    clock.now = T0 + 30
    done = client.post(links["ack"])
    assert done.status_code == 200 and f"Incident #{incident} acknowledged" in done.text
    detail = client.get(f"/api/v1/incidents/{incident}", headers=AUTH).json()
    assert detail["state"] == "acknowledged" and detail["acknowledged_by"] == "one-click link"
    replayed = client.post(links["ack"])
    assert replayed.status_code == 409 and "already been used" in replayed.text
    assert client.get(links["ack"]).status_code == 409
    resolved = client.post(links["resolve"])  # the page's other link still works, once
    assert resolved.status_code == 200 and state_of(client, incident) == "resolved"


def test_forged_expired_and_open_links_are_refused_with_a_sentence(client, clock):
    incident = open_incident(client)
    links = links_of(client, incident, ttl_s=600)
    forged = LINK_PATH + sign(link_key("some-other-token-0123456789"), incident, "resolve", T0 + 600)
    for method in (client.get, client.post):
        refused = method(forged)
        assert refused.status_code == 403 and "not valid" in refused.text
        assert method(LINK_PATH + "garbage").status_code == 403
    tampered = links["ack"][:-3] + ("AAA" if not links["ack"].endswith("AAA") else "BBB")
    assert client.post(tampered).status_code == 403
    opened = client.post(links["open"])
    assert opened.status_code == 400 and "only shows the incident" in opened.text
    clock.now = T0 + 600
    expired = client.post(links["resolve"])
    assert expired.status_code == 410 and "expired" in expired.text
    assert state_of(client, incident) == "triggered"


def test_an_open_link_shows_the_incident_read_only(client):
    incident = open_incident(client)
    shown = client.get(links_of(client, incident, person="alice")["open"])
    assert shown.status_code == 200 and "<form" not in shown.text
    assert "GpuLost" in shown.text and "node=node-1" in shown.text and "opened" in shown.text
    # the console's look and words: its stylesheet, badges, events as people say them, times with their zone
    assert '<link rel="stylesheet" href="/console/static/console.css">' in shown.text
    assert 'class="badge prio prio-' in shown.text and ">page_queued" not in shown.text
    assert "page queued" in shown.text and "firing page to alice via phone (tier 1)" in shown.text
    assert re.search(r"\d{4}-\d\d-\d\d \d\d:\d\d UTC", shown.text) and "T20:" not in shown.text
    assert client.get("/console/static/console.css").status_code == 200  # served without a login


def test_a_link_of_a_resolved_incident_says_there_is_nothing_to_do(client):
    incident = open_incident(client)
    links = links_of(client, incident)
    act(client, incident, "resolve", by="alice")
    assert "Nothing to do" in client.get(links["ack"]).text
    refused = client.post(links["ack"])
    assert refused.status_code == 409 and "Nothing was done" in refused.text
    unknown = LINK_PATH + sign(link_key(TOKEN), 999, "ack", T0 + 60)
    assert client.get(unknown).status_code == 404 and client.post(unknown).status_code == 404


def test_a_page_is_marked_noisy_through_the_api_in_any_state_and_the_newest_mark_counts(client, clock):
    incident = open_incident(client)
    assert act(client, incident, "resolve", by="alice").status_code == 200
    marked = act(client, incident, "mark", by="bob", verdict="not_actionable", reason="a test of the PDU")
    assert marked.status_code == 200 and marked.json()["id"] == incident
    assert act(client, incident, "mark", by="bob").status_code == 200  # the default verdict: noisy
    timeline = client.get(f"/api/v1/incidents/{incident}", headers=AUTH).json()["timeline"]
    assert [(e["actor"], e["detail"]) for e in timeline if e["kind"] == "marked"] == [
        ("bob", {"verdict": "not_actionable", "reason": "a test of the PDU"}), ("bob", {"verdict": "noisy"})]
    assert act(client, incident, "mark", by="bob", verdict="boring").status_code == 422
    assert act(client, incident, "mark", verdict="noisy").status_code == 422  # who says so
    assert act(client, 9999, "mark", by="bob").status_code == 404


def test_a_mark_noisy_link_offers_two_verdicts_and_acts_once(client, clock):
    incident = open_incident(client)
    links = links_of(client, incident)
    shown = client.get(links["noisy"])
    assert shown.status_code == 200 and 'action="?verdict=noisy"' in shown.text
    assert 'action="?verdict=not_actionable"' in shown.text
    assert client.post(links["noisy"] + "?verdict=dull").status_code == 400
    done = client.post(links["noisy"] + "?verdict=not_actionable")
    assert done.status_code == 200 and f"Incident #{incident} marked not actionable" in done.text
    assert client.post(links["noisy"]).status_code == 409  # once
    timeline = client.get(f"/api/v1/incidents/{incident}", headers=AUTH).json()["timeline"]
    assert [(e["actor"], e["detail"]["verdict"]) for e in timeline if e["kind"] == "marked"] == [
        ("one-click link", "not_actionable")]
    assert state_of(client, incident) == "triggered"  # a verdict changes nothing else


@pytest.mark.parametrize("incident_id", [2**31, 2**40, 2**63 - 1])
def test_ids_past_32_bits_are_a_404_on_both_stores_never_a_500(client, incident_id):
    """PostgreSQL's INTEGER stops at 2^31-1: the ids (revision 0007) are BIGINT, as the API takes ids to
    2^63-1, so a large id is simply not found, on every route and link that takes one."""
    assert client.get(f"/api/v1/incidents/{incident_id}", headers=AUTH).status_code == 404
    for verb in ("ack", "resolve", "escalate", "reopen"):
        assert act(client, incident_id, verb, by="alice").status_code == 404
    assert client.post(f"/api/v1/incidents/{incident_id}/notes", json={"by": "a", "text": "x"},
                       headers=AUTH).status_code == 404
    assert client.get(links_of(client, incident_id)["ack"]).status_code == 404
    assert client.get("/api/v1/inbox", params={"incident": incident_id}, headers=AUTH).status_code == 200
