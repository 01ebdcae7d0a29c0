"""Escalation paused by a maintenance window, through the notifier's API on a fake clock: the engine's
passes and the delivery worker's (mute stage and inbox) run by hand, as the clock moves on. While a
window holds an incident, its escalation stays at the step it reached (one held page, one pause);
when the window is over it resumes there, unless the incident was acknowledged or resolved meanwhile."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from vigil.common.times import parse_time, rfc3339
from vigil.notifier.app import create_app
from vigil.notifier.postmortem import render_postmortem
from vigil.notifier.postmortem.facts import incident_facts
from vigil.oncall.loader import parse_oncall
from vigil.cli.incidents import describe_incident
from vigil.notifier.incident_text import event_text as what
from test_notifier_support import AUTH, alert, make_settings, payload
from test_oncall_engine import ONCALL, SATURDAY_3AM as T0  # 3 tiers: carol (the rota), dave after 5 m, mgr after 10 m

HOOK = "/api/v1/alerts/alertmanager"
TIER_2_AFTER, TIER_3_AFTER = 300, 900  # the gpu policy's escalate_after: 5 m, then 10 m
WINDOW_S = 7200  # longer than the policy's rounds and its one-hour re-page


class Notifier:
    """The notifier app with a clock the test moves; `at` runs the engine and then the delivery worker."""

    def __init__(self, client: TestClient, now: list[float]):
        self.client, self._now = client, now

    def at(self, seconds: float) -> None:
        self._now[0] = T0 + seconds
        self.client.app.state.engine.run_once()
        while self.client.app.state.worker.run_once():
            pass

    def post(self, path: str, body: dict) -> dict:
        response = self.client.post(path, json=body, headers=AUTH)
        assert response.status_code in (200, 201), response.text
        return response.json()

    def window(self, seconds: float = WINDOW_S) -> dict:
        return self.post("/api/v1/maintenance", {"match": {"node": "node-7"}, "for": f"{seconds:.0f}s",
                                                 "reason": "firmware", "by": "alice"})

    def open(self) -> int:
        return self.post(HOOK, payload(alert("a", node="node-7"), group_key="node-7"))["incident_id"]

    def detail(self, incident: int) -> dict:
        return self.client.get(f"/api/v1/incidents/{incident}", headers=AUTH).json()

    def events(self, incident: int, kind: str) -> list[dict]:
        return [e for e in self.detail(incident)["timeline"] if e["kind"] == kind]

    def delivered(self) -> list[str]:
        """Who the inbox has pages for, oldest first."""
        return [p["recipient"] for p in self.client.get("/api/v1/inbox", headers=AUTH).json()["pages"]]

    def run_until(self, end: float, step: float = 60) -> None:
        """Move the clock on from now to `end` (seconds after T0), a pass every `step` seconds."""
        at = self._now[0] - T0
        while at + step < end:
            at += step
            self.at(at)


@pytest.fixture
def notifier(tmp_path, db_url):
    now = [T0]
    app = create_app(make_settings(tmp_path, db_url=db_url), parse_oncall(ONCALL), run_worker=False,
                     clock=lambda: now[0])
    with TestClient(app) as client:
        yield Notifier(client, now)


def test_a_window_pauses_the_escalation_at_the_held_page_and_resumes_it_when_over(notifier):
    window = notifier.window()
    incident = notifier.open()
    notifier.run_until(WINDOW_S)  # two hours of passes: three tiers, three rounds' worth
    pages = notifier.detail(incident)["pages"]
    assert [(p["person"], p["tier"], p["state"]) for p in pages] == [("carol", 0, "muted")]
    assert len(notifier.events(incident, "page_held")) == 1 and notifier.delivered() == []
    [paused] = notifier.events(incident, "escalation_paused")
    assert paused["detail"] == {"reason": "maintenance", "window": window["id"], "why": "firmware", "by": "alice",
                                "until": window["ends_at"], "tier": 0}
    assert [e["detail"]["tier"] for e in notifier.events(incident, "tier_paged")] == [0]
    assert notifier.events(incident, "policy_exhausted") == [] and notifier.events(incident, "escalation_resumed") == []
    detail = notifier.detail(incident)  # the API and `vigil incidents show` say the ack target waits for the window
    assert detail["escalation_paused"] == {**paused["detail"], "since": paused["at"]} and detail["sla"]["ack"] == "pending"
    until = window["ends_at"][:19].replace("T", " ")
    assert f"ack target paused: maintenance window {window['id']} (firmware) until {until} UTC" in "\n".join(describe_incident(detail))

    notifier.at(WINDOW_S)  # the window is over: carol never heard of it, she is paged now
    assert notifier.delivered() == ["carol"]
    [resumed] = notifier.events(incident, "escalation_resumed")
    assert resumed["at"] == rfc3339(T0 + WINDOW_S) and resumed["detail"]["window"] == window["id"]
    assert resumed["detail"]["tier"] == 0 and resumed["detail"]["paused_for_s"] == WINDOW_S
    assert notifier.detail(incident)["escalation_paused"] is None
    lines = describe_incident(notifier.detail(incident))
    timeline = lines[lines.index("timeline:") + 1:]
    texts = [what(e) for e in notifier.detail(incident)["timeline"]]
    starts = {line.index(text) for line, text in zip(timeline, texts) if text and "escalated" not in line}
    assert len(starts) == 1, timeline  # "escalation_resumed" is longer than the others: the texts still line up
    queued = [line for line in timeline if " page_queued " in line]  # the held page says why it never went out
    assert queued[0].endswith(f"; held: maintenance window {window['id']}"), queued
    assert not any(";" in line for line in queued[1:]), queued  # the page sent when the window ended: no fate
    notifier.at(WINDOW_S + TIER_2_AFTER - 1)
    assert notifier.delivered() == ["carol"]  # the step timing restarted when the window ended
    notifier.at(WINDOW_S + TIER_2_AFTER)
    assert notifier.delivered() == ["carol", "dave"]
    notifier.at(WINDOW_S + TIER_3_AFTER)
    assert notifier.delivered() == ["carol", "dave", "mgr"]
    assert len(notifier.events(incident, "escalation_paused")) == 1


def test_a_window_ended_early_resumes_the_escalation_at_once(notifier):
    window = notifier.window()
    incident = notifier.open()
    notifier.run_until(1200)  # past the 10 minutes P1 gives to acknowledge: not breached while held
    ended = notifier.post(f"/api/v1/maintenance/{window['id']}/end", {})["ended_at"]
    notifier.at(parse_time(ended) - T0)
    assert notifier.delivered() == ["carol"]
    [resumed] = notifier.events(incident, "escalation_resumed")
    assert resumed["at"] == ended
    assert notifier.detail(incident)["sla"]["ack"] != "breached" and notifier.events(incident, "sla_breach") == []
    resume = parse_time(ended) - T0
    notifier.run_until(resume + TIER_2_AFTER, step=1)
    assert notifier.delivered() == ["carol"]  # the acknowledge target restarted too: no breach escalates at once
    notifier.at(resume + TIER_2_AFTER)
    assert notifier.delivered() == ["carol", "dave"]


def test_a_window_left_to_run_holds_on_when_another_one_ends(notifier):
    other = notifier.post("/api/v1/maintenance", {"match": {"rack": "r9"}, "for": "1h", "by": "bob"})
    incident = notifier.open()
    notifier.window()
    notifier.run_until(600)
    notifier.post(f"/api/v1/maintenance/{other['id']}/end", {})
    notifier.run_until(WINDOW_S - 60)
    assert notifier.delivered() == [] and notifier.events(incident, "escalation_resumed") == []


def test_a_window_in_the_on_call_file_pauses_the_escalation_too(tmp_path):
    oncall = ONCALL + """
maintenance:
  - {match: {node: node-7}, start: "2026-11-21T02:00", end: "2026-11-21T04:00", reason: rack move}
"""
    now = [T0]  # 03:00: an hour left
    app = create_app(make_settings(tmp_path), parse_oncall(oncall), run_worker=False, clock=lambda: now[0])
    with TestClient(app) as client:
        notifier = Notifier(client, now)
        incident = notifier.open()
        notifier.run_until(3600)
        [paused] = notifier.events(incident, "escalation_paused")
        assert paused["detail"]["window"] == "on-call file" and paused["detail"]["why"] == "rack move"
        assert paused["detail"]["until"] == "2026-11-21T04:00:00.000Z" and notifier.delivered() == []
        notifier.at(3600)
        assert notifier.delivered() == ["carol"] and len(notifier.events(incident, "escalation_resumed")) == 1


@pytest.mark.parametrize("verb", ["ack", "resolve"])
def test_an_incident_acknowledged_or_resolved_during_the_window_is_not_paged_when_it_ends(notifier, verb):
    notifier.window()
    incident = notifier.open()
    notifier.run_until(600)
    notifier.post(f"/api/v1/incidents/{incident}/{verb}", {"by": "carol"})
    notifier.run_until(WINDOW_S + 1800)  # past the window's end and the hour an acknowledgement lasts
    assert notifier.delivered() == []  # resolved: its resolved page too, nobody heard of the firing one
    assert [p["person"] for p in notifier.detail(incident)["pages"] if p["status"] == "firing"] == ["carol"]
    assert notifier.events(incident, "ack_expired") == []
    resumed = [e["detail"]["tier"] for e in notifier.events(incident, "escalation_resumed")]
    if verb == "resolve":
        assert resumed == []
        return
    # the re-page due an hour after the acknowledgement (in the window) waited for its end, and the
    # acknowledgement lasts its hour again from then
    assert resumed == [None]
    notifier.run_until(WINDOW_S + 3600 + 60)
    assert notifier.delivered() == ["carol"] and len(notifier.events(incident, "ack_expired")) == 1


def test_an_escalation_asked_for_during_the_window_is_paged_when_it_ends(notifier):
    notifier.window()
    incident = notifier.open()
    notifier.run_until(600)
    notifier.post(f"/api/v1/incidents/{incident}/escalate", {"by": "carol"})
    notifier.run_until(WINDOW_S - 60)
    assert notifier.delivered() == [] and [p["person"] for p in notifier.detail(incident)["pages"]] == ["carol"]
    notifier.at(WINDOW_S)
    assert notifier.delivered() == ["dave"]  # tier 2, as asked, once nobody holds its pages
    notifier.at(WINDOW_S + TIER_3_AFTER - TIER_2_AFTER)
    assert notifier.delivered() == ["dave", "mgr"]


def test_pages_sent_before_the_window_stand_and_the_next_tier_waits_for_its_end(notifier):
    incident = notifier.open()
    notifier.at(0)
    assert notifier.delivered() == ["carol"]
    notifier.run_until(120)
    notifier.window()
    notifier.run_until(WINDOW_S)
    held = [(p["person"], p["state"]) for p in notifier.detail(incident)["pages"]]
    assert held == [("carol", "sent"), ("dave", "muted")]  # tier 2's page when it was due, held
    assert [e["detail"]["tier"] for e in notifier.events(incident, "escalation_paused")] == [1]
    notifier.post(f"/api/v1/incidents/{incident}/resolve", {"by": "carol"})
    notifier.at(WINDOW_S)
    assert notifier.delivered() == ["carol", "carol"]  # carol heard of the start: she hears of the end


def test_the_postmortem_tells_of_the_pause_and_the_resume(notifier):
    window = notifier.window()
    incident = notifier.open()
    notifier.run_until(WINDOW_S + 60)
    notifier.post(f"/api/v1/incidents/{incident}/resolve", {"by": "carol"})
    facts = incident_facts(notifier.detail(incident), [], T0 + WINDOW_S + 120)
    until = window["ends_at"][:19].replace("T", " ")
    assert [e["text"] for e in facts.escalations] == [
        f"escalation paused at tier 1: maintenance window {window['id']} (firmware) until {until} UTC",
        f"escalation resumed at tier 1: maintenance window {window['id']} over, paused 2h"]
    assert [p.result for p in facts.pages if p.status == "firing"] == [
        f"held: maintenance window {window['id']}", "sent"]
    markdown = render_postmortem(notifier.detail(incident), [], "md", now=T0 + WINDOW_S + 120)[0].decode()
    assert f"escalation paused at tier 1: maintenance window {window['id']} (firmware)" in markdown
    assert "escalation resumed at tier 1" in markdown and "policy_exhausted" not in markdown
