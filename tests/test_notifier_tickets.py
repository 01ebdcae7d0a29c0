"""An alert that files a ticket (`notify: ticket`, declared in its rule spec) wakes nobody and is never
escalated: its incident takes the on-call file's ticket priority, its pages wait for the person's
working hours whatever their notification rules say, only the policy's first tier gets one, and a
missed acknowledge target is recorded without moving the escalation. Through a real notifier, with the
clock set to 3 a.m. on a Saturday (computed from the simulated now, whatever day that is)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import requests

from vigil.common.times import parse_time

from sim_clock import SIM_NOW
from test_notifier_support import AUTH, NotifierServer, alert, free_port, inbox, make_settings, payload, wait_for
from vigil.oncall.loader import parse_oncall
from vigil.oncall.plan import contact_plan, route_incident

ONCALL = """
timezone: UTC
working_hours: {days: [mon, tue, wed, thu, fri], start: "09:00", end: "18:00"}
priorities:
  P1: {ack_within: 5m}
  P5: {ack_within: 10m}
severities: {critical: P1, warning: P3}
people:
  ana:
    contacts: {phone: {inbox: true, kind: phone}}
    notify: [{steps: [{contact: phone}]}]
  bob:
    contacts: {phone: {inbox: true, kind: phone}}
policies:
  main:
    tiers:
      - {name: DRI, notify: [{person: ana}], escalate_after: 5m}
      - {name: senior, notify: [{person: bob}], escalate_after: 5m}
default_policy: main
"""


def saturday_3am() -> float:
    """The first Saturday 03:00 UTC after the simulated now."""
    now = datetime.fromtimestamp(SIM_NOW, timezone.utc)
    day = (now + timedelta(days=(5 - now.weekday()) % 7 or 7)).replace(hour=3, minute=0, second=0, microsecond=0)
    return day.timestamp()


def monday_9am_after(at: float) -> float:
    day = datetime.fromtimestamp(at, timezone.utc)
    monday = (day + timedelta(days=(7 - day.weekday()) % 7 or 7)).replace(hour=9, minute=0, second=0, microsecond=0)
    return monday.timestamp()


def ticket_alert(fingerprint: str = "fp-fill") -> dict:
    return alert(fingerprint, alertname="NodeFilesystemFillingUp", severity="warning", notify="ticket")


def test_a_ticket_routes_at_the_ticket_priority_and_its_pages_wait_for_working_hours():
    oncall = parse_oncall(ONCALL)
    ticket = route_incident(oncall, {"severity": "critical", "notify": "ticket"})
    assert (ticket.priority, ticket.ticket) == ("P5", True)  # a ticket whatever its severity says
    page = route_incident(oncall, {"severity": "critical", "notify": "page"})
    assert (page.priority, page.ticket) == ("P1", False)
    night = saturday_3am()
    [held] = contact_plan(oncall, "ana", "P5", "warning", night, ticket=True)
    assert held.due_at == monday_9am_after(night)
    [at_once] = contact_plan(oncall, "ana", "P5", "warning", night)  # her rule alone sends it now
    assert at_once.due_at == night


def test_a_ticket_at_3am_on_a_saturday_wakes_nobody_and_is_never_escalated(tmp_path, fake_clock):
    fake_clock.t = saturday_3am()
    monday = monday_9am_after(fake_clock.t)
    with NotifierServer(make_settings(tmp_path, port=free_port()), ONCALL, clock=fake_clock) as server:
        posted = requests.post(f"{server.url}/api/v1/alerts/alertmanager", headers=AUTH, timeout=10,
                               json=payload(ticket_alert(), group_key='{}:{alertname="NodeFilesystemFillingUp"}'))
        assert posted.status_code == 200, posted.text
        incident = posted.json()["incident_id"]
        detail = requests.get(f"{server.url}/api/v1/incidents/{incident}", headers=AUTH, timeout=5).json()
        assert detail["priority"] == "P5"
        # an hour on: past both tiers' 5-minute waits; the 10-minute acknowledge target counts from Monday
        # 09:00, when ana's held page goes out (nobody could answer it before), so it is not breached
        for _ in range(12):
            fake_clock.advance(300)
            requests.get(f"{server.url}/healthz", timeout=5)
        def exhausted():
            found = requests.get(f"{server.url}/api/v1/incidents/{incident}", headers=AUTH, timeout=5).json()
            return found if "policy_exhausted" in [e["kind"] for e in found["timeline"]] else None
        detail = wait_for(exhausted)
        assert detail["sla"]["ack"] == "pending" and "sla_breach" not in [e["kind"] for e in detail["timeline"]]
        assert abs(parse_time(detail["ack_due_at"]) - (monday + 600)) < 1
        assert inbox(server) == []  # nobody was woken
        kinds = [event["kind"] for event in detail["timeline"]]
        assert "policy_exhausted" in kinds and kinds.count("tier_paged") == 1  # the first tier only
        assert [page["person"] for page in detail["pages"]] == ["ana"]
        fake_clock.t = monday + 5  # Monday morning: ana's page goes out
        [sent] = wait_for(lambda: inbox(server))
        assert sent["recipient"] == "ana"
        assert all(page["recipient"] == "ana" for page in inbox(server))
