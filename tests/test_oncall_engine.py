"""The on-call engine's scenarios on a fake clock, on SQLite and PostgreSQL: a real on-call file, the
store's ingest (as the webhook calls it), the escalation loop pass by pass and the people's actions."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from vigil.notifier.ingest.group_commit import ingest_alone
from vigil.notifier.engine.escalation import EngineIntake
from vigil.notifier.engine import actions
from vigil.notifier.incident_text import event_text
from vigil.notifier.engine.escalation_loop import EscalationEngine
from vigil.notifier.metrics import NotifierMetrics
from vigil.notifier.core.models import WebhookPayload
from vigil.notifier.store import Store
from vigil.oncall.loader import parse_oncall
from test_notifier_support import alert, payload

ONCALL = """
timezone: UTC
priorities:
  P1: {ack_within: 10m, resolve_within: 4h}
  P2: {ack_within: 1m}
  P3: {ack_within: 301s}
people:
  alice: {contacts: {phone: {inbox: true, kind: phone}, sms: {inbox: true, kind: sms}}}
  bob:   {contacts: {phone: {inbox: true, kind: phone}}}
  carol: {contacts: {phone: {inbox: true, kind: phone}}}
  dave:  {contacts: {phone: {inbox: true, kind: phone}}}
  erin:  {contacts: {phone: {inbox: true, kind: phone}}}
  mgr:   {contacts: {email: {inbox: true, kind: email}}}
schedules:
  primary:
    layers:
      - {name: weekly, rotation: weekly, handoff: "2026-11-02T09:00", people: [alice, bob, carol]}
    overrides:
      - {person: erin, start: "2026-11-22T00:00", end: "2026-11-22T06:00"}
  daytime:
    layers:
      - name: office
        rotation: daily
        handoff: "2026-11-02T09:00"
        people: [alice]
        restrict: {days: [mon, tue, wed, thu, fri], start: "09:00", end: "18:00"}
policies:
  gpu:
    tiers:
      - {name: DRI, notify: [{schedule: primary}], escalate_after: 5m}
      - {name: senior, notify: [{person: dave}], escalate_after: 10m}
      - {name: manager, notify: [{person: mgr}], escalate_after: 15m}
    repage_acknowledged_after: 1h
  gappy:
    tiers:
      - {name: office hours, notify: [{schedule: daytime}], escalate_after: 5m}
      - {name: manager, notify: [{person: mgr}], escalate_after: 5m}
routes:
  - {match: {team: gappy}, policy: gappy}
default_policy: gpu
"""
SATURDAY_3AM = datetime(2026, 11, 21, 3, 0, tzinfo=timezone.utc).timestamp()  # the rota's 3rd week: carol
SUNDAY_3AM = datetime(2026, 11, 22, 3, 0, tzinfo=timezone.utc).timestamp()  # erin's override


class Scenario:
    def __init__(self, db_url: str, now: float, oncall: str = ONCALL):
        self.store = Store(db_url)
        self.oncall = parse_oncall(oncall)
        self.now = now
        self.metrics = NotifierMetrics()
        self.route = EngineIntake(self.oncall, None, self.metrics)
        self.engine = EscalationEngine(self.store, self.oncall, lambda: self.now, self.metrics)

    def post(self, body: dict) -> int:
        return ingest_alone(self.store.notifications, WebhookPayload.model_validate(body), self.now, self.route).incident_id

    def at(self, offset_s: float, start: float) -> None:
        self.now = start + offset_s
        self.engine.run_once()

    def paged(self, incident_id: int, status: str = "firing") -> list[tuple]:
        return [(p["person"], p["contact"], p["tier"]) for p in self.store.outbox.pages_of(incident_id)
                if p["status"] == status]

    def kinds(self, incident_id: int) -> list[str]:
        return [e["kind"] for e in self.store.timeline.of(incident_id)]


@pytest.fixture
def scenario(db_url):
    opened = Scenario(db_url, SATURDAY_3AM)
    yield opened
    opened.store.close()


def test_a_critical_alert_at_3am_saturday_phones_the_dri_then_escalates_until_acknowledged(scenario):
    incident = scenario.post(payload(alert("a")))
    assert scenario.paged(incident) == [("carol", "phone", 0)]
    scenario.at(299, SATURDAY_3AM)
    assert len(scenario.paged(incident)) == 1  # the wait is not over
    scenario.at(300, SATURDAY_3AM)
    assert scenario.paged(incident)[1:] == [("dave", "phone", 1)]
    senior = [e for e in scenario.store.timeline.of(incident) if e["kind"] == "tier_paged"][-1]
    assert event_text(senior) == "tier 2 (senior): dave — not acknowledged within 5m by carol (DRI)"  # why, in words
    shown = actions.acknowledge(scenario.store, incident, "dave", scenario.now + 60)
    assert (shown["state"], shown["acknowledged_by"], shown["sla"]["ack"]) == ("acknowledged", "dave", "met")
    scenario.at(3600, SATURDAY_3AM + 360)  # an hour later: no tier 3, but the ack expired: paged again
    assert scenario.paged(incident)[2:] == [("carol", "phone", 0)]
    assert "ack_expired" in scenario.kinds(incident)
    assert scenario.store.notifications.incident(incident)["state"] == "triggered"
    actions.acknowledge(scenario.store, incident, "carol", scenario.now)
    with pytest.raises(actions.TransitionRefused, match="already acknowledged by carol"):
        actions.acknowledge(scenario.store, incident, "dave", scenario.now)
    scenario.post(payload(alert("a", status="resolved")))
    assert scenario.store.notifications.incident(incident)["state"] == "resolved"
    assert sorted(scenario.paged(incident, "resolved")) == [("carol", "phone", 0), ("dave", "phone", 1)]
    assert scenario.store.escalations.pending_count() == 0


def test_an_expired_acknowledgement_is_no_ack_breach_and_keeps_the_tier_spacing(scenario):
    """Acknowledged in 8 s against a 10 m target: when the acknowledgement expires an hour later, the DRI
    is paged again with a new target counting from then, not breached against the old one (which would
    phone the senior line at once)."""
    incident = scenario.post(payload(alert("a")))
    actions.acknowledge(scenario.store, incident, "carol", SATURDAY_3AM + 8)
    scenario.at(3608, SATURDAY_3AM)
    scenario.at(3608.5, SATURDAY_3AM)
    scenario.at(3638, SATURDAY_3AM)
    assert scenario.paged(incident) == [("carol", "phone", 0), ("carol", "phone", 0)]
    shown = scenario.store.notifications.incident(incident)
    assert (shown["state"], shown["sla"]["ack"]) == ("triggered", "pending")
    assert shown["ack_due_at"] == "2026-11-21T04:10:08.000Z"  # 10 m from the expiry
    assert "sla_breach" not in scenario.kinds(incident)
    scenario.at(3608 + 299, SATURDAY_3AM)
    assert len(scenario.paged(incident)) == 2  # the DRI's tier waits its 5 m as on the first round
    scenario.at(3608 + 300, SATURDAY_3AM)
    assert scenario.paged(incident)[2:] == [("dave", "phone", 1)]


def test_escalating_an_acknowledged_incident_restarts_its_ack_target(scenario):
    """`vigil incidents escalate` after a timely ack, past the first target's due time: the next tier is
    paged once, no breach is recorded and the tier after it is not paged half a second later."""
    incident = scenario.post(payload(alert("a")))
    actions.acknowledge(scenario.store, incident, "carol", SATURDAY_3AM + 8)
    actions.escalate_now(scenario.store, incident, "carol", SATURDAY_3AM + 900, scenario.oncall)
    scenario.at(900, SATURDAY_3AM)
    scenario.at(900.5, SATURDAY_3AM)
    scenario.at(901, SATURDAY_3AM)
    assert scenario.paged(incident) == [("carol", "phone", 0), ("dave", "phone", 1)]
    shown = scenario.store.notifications.incident(incident)
    assert shown["sla"]["ack"] == "pending" and "sla_breach" not in scenario.kinds(incident)
    assert sum(s.value for s in scenario.metrics.sla_breaches.collect()[0].samples if s.name.endswith("_total")) == 0


HELD_AT_NIGHT = """
timezone: UTC
working_hours: {days: [mon, tue, wed, thu, fri], start: "09:00", end: "18:00"}
priorities:
  P4: {ack_within: 4h}
severities: {info: P4}
people:
  alice: {contacts: {email: {inbox: true, kind: email}}, notify: [{priorities: [P4], steps: [{contact: email, hold_until: working_hours}]}]}
  bob: {contacts: {email: {inbox: true, kind: email}}, notify: [{priorities: [P4], steps: [{contact: email, hold_until: working_hours}]}]}
  mgr: {contacts: {email: {inbox: true, kind: email}}}
policies:
  gpu:
    tiers:
      - {name: DRI, notify: [{person: alice}], escalate_after: 30m}
      - {name: senior, notify: [{person: bob}], escalate_after: 30m}
      - {name: manager, notify: [{person: mgr}], escalate_after: 30m}
default_policy: gpu
"""
MONDAY_9AM = datetime(2026, 11, 23, 9, 0, tzinfo=timezone.utc).timestamp()


def test_a_tier_whose_page_is_held_until_working_hours_holds_its_escalation(db_url):
    """A P4 on Saturday night: the DRI's e-mail waits for Monday 09:00, and so do the senior line and
    the manager; the acknowledge target counts from the moment the DRI can read the page."""
    scenario = Scenario(db_url, SATURDAY_3AM, HELD_AT_NIGHT)
    try:
        incident = scenario.post(payload(alert("a", severity="info")))
        for hours in (1, 5, 12, 30):
            scenario.at(hours * 3600, SATURDAY_3AM)
        assert scenario.paged(incident) == [("alice", "email", 0)]  # queued, held for Monday
        assert scenario.store.outbox.states(now=scenario.now) == {"scheduled": 1}  # not a backlog
        shown = scenario.store.notifications.incident(incident)
        assert shown["sla"]["ack"] == "pending" and shown["ack_due_at"] == "2026-11-23T13:00:00.000Z"
        assert "sla_breach" not in scenario.kinds(incident)
        scenario.at(30 * 60 - 1, MONDAY_9AM)
        assert len(scenario.paged(incident)) == 1
        scenario.at(30 * 60, MONDAY_9AM)
        assert scenario.paged(incident)[1:] == [("bob", "email", 1)]
    finally:
        scenario.store.close()


def test_an_acknowledgement_stops_the_escalation(scenario):
    incident = scenario.post(payload(alert("a")))
    actions.acknowledge(scenario.store, incident, "carol", SATURDAY_3AM + 30)
    for offset in (300, 900, 1800):
        scenario.at(offset, SATURDAY_3AM)
    assert scenario.paged(incident) == [("carol", "phone", 0)]


def test_an_override_moves_the_page_to_the_covering_person(db_url):
    scenario = Scenario(db_url, SUNDAY_3AM)
    try:
        assert scenario.paged(scenario.post(payload(alert("a")))) == [("erin", "phone", 0)]
    finally:
        scenario.store.close()


def test_an_sla_breach_escalates_at_once(scenario):
    incident = scenario.post(payload(alert("a", priority="P2")))
    assert scenario.store.notifications.incident(incident)["priority"] == "P2"
    scenario.at(60, SATURDAY_3AM)  # ack target 1 m, well before the tier's 5 m wait
    assert scenario.paged(incident) == [("carol", "phone", 0), ("dave", "phone", 1)]
    shown = scenario.store.notifications.incident(incident)
    assert shown["sla"]["ack"] == "breached" and "sla_breach" in scenario.kinds(incident)


def test_an_ack_breach_right_after_a_tier_was_paged_keeps_the_policys_spacing(scenario):
    """The senior line is paged at 5 m by the DRI's wait, and the 301 s acknowledge target is missed a
    second later: the manager is paged 301 s after the senior line (the shorter of the senior tier's 10 m
    and the target), not at once, and not as late as the senior tier's own 10 m."""
    incident = scenario.post(payload(alert("a", priority="P3")))
    scenario.at(300, SATURDAY_3AM)
    scenario.at(301, SATURDAY_3AM)
    scenario.at(301.5, SATURDAY_3AM)
    assert scenario.paged(incident) == [("carol", "phone", 0), ("dave", "phone", 1)]
    assert "sla_breach" in scenario.kinds(incident)
    scenario.at(600, SATURDAY_3AM)
    assert len(scenario.paged(incident)) == 2
    scenario.at(601, SATURDAY_3AM)
    assert scenario.paged(incident)[2:] == [("mgr", "email", 2)]


def test_a_tier_with_nobody_on_call_goes_to_the_next_tier(scenario):
    incident = scenario.post(payload(alert("a", team="gappy")))
    assert scenario.paged(incident) == [("mgr", "email", 1)]
    assert scenario.kinds(incident)[:4] == ["opened", "routed", "tier_empty", "page_queued"]


def test_manual_resolve_escalate_note_and_refusals(scenario):
    incident = scenario.post(payload(alert("a")))
    actions.escalate_now(scenario.store, incident, "carol", SATURDAY_3AM + 10, scenario.oncall)
    scenario.at(10, SATURDAY_3AM)
    assert scenario.paged(incident)[1:] == [("dave", "phone", 1)]
    actions.add_note(scenario.store, incident, "dave", "reseating the GPU", SATURDAY_3AM + 20)
    actions.resolve(scenario.store, incident, "dave", SATURDAY_3AM + 30)
    with pytest.raises(actions.TransitionRefused, match="resolved"):
        actions.acknowledge(scenario.store, incident, "dave", SATURDAY_3AM + 40)
    with pytest.raises(actions.IncidentNotFound):
        actions.resolve(scenario.store, incident + 99, "dave", SATURDAY_3AM + 40)
    timeline = scenario.store.timeline.of(incident)
    assert [(e["kind"], e["actor"]) for e in timeline if e["kind"] in ("escalated", "note", "resolved")] == [
        ("escalated", "carol"), ("note", "dave"), ("resolved", "dave")]
    assert scenario.store.notifications.incident(incident)["resolved_by"] == "dave"
