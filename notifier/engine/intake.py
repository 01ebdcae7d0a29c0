"""What a stored notification does, in the webhook's transaction (`IncidentPlanner.on_ingest`):

- open: route the incident (`route_incident`: policy, priority, team), set its SLA due times
  (`sla_for`), timeline `opened` + `routed`, and start its escalation: the first tier is paged in this
  same transaction (so the webhook's answer means "paged"), the next step waits in `escalations`;
- reopen (fired again within `incidents.reopen_within`): timeline `reopened`, fresh SLA due times, the
  escalation restarts at the first tier;
- update with a new firing: timeline `alert_added`; the people of the tier paged last get the
  updated page now;
- resolve: the escalation ends, timeline `resolved` (actor `alertmanager`), and a resolved page goes
  to every (person, contact) that had a firing page;
- record (resolved, never heard firing): routed, and the first tier gets the resolved page.

A first-version on-call file routes to an implicit one-tier policy (`target:NAME`), so it pages as it
always did: the target's channels that want the severity, at once, no escalation.
"""

from __future__ import annotations

import json

import sqlalchemy as sa

from vigil.notifier.after_commit import AfterCommit
from vigil.notifier.engine.escalation import run_step
from vigil.notifier.engine.paging import LinkMaker, page_contacts, page_people
from vigil.notifier.metrics import NotifierMetrics
from vigil.notifier.store import incident_state
from vigil.notifier.store.escalations import ESCALATE, Escalation, Escalations
from vigil.notifier.store.notifications import IngestEvent
from vigil.notifier.store.timeline import Timeline
from vigil.notifier.store.timeline import event as event_row
from vigil.oncall.model import OncallConfig
from vigil.oncall.plan import IncidentRouting, UnknownPolicy, route_incident, sla_for, tier_people

ALERTMANAGER = "alertmanager"


class EngineIntake:
    """The on-call engine's `IncidentPlanner`."""

    def __init__(self, oncall: OncallConfig, links: LinkMaker | None = None, metrics: NotifierMetrics | None = None):
        self._oncall = oncall
        self._links = links
        self._metrics = metrics
        self.reopen_within_s = float(oncall.incidents.reopen_within or 0.0)

    def on_ingest(self, event: IngestEvent) -> int:
        action, conn, incident_id, now = event.decision.action, event.conn, event.incident_id, event.now
        timeline = Timeline(conn.engine)
        if action in ("open", "record"):
            # a new incident: its labels are this notification's common labels, as just stored
            opened = event_row(incident_id, now, "opened", ALERTMANAGER, title=event.title)
            routing, routed = self._route(conn, incident_id, event.payload.commonLabels, now,
                                          with_targets=action == "open")
            if action == "open":
                timeline.record_all(conn, [opened, routed])
                return self._start(conn, incident_id, routing, now, event.counted)
            timeline.record_all(conn, [opened, routed, event_row(incident_id, now, "resolved", ALERTMANAGER)])
            return self._page_first_tier_resolved(conn, incident_id, routing, now)
        if action == "reopen":
            reopened = event_row(incident_id, now, "reopened", ALERTMANAGER, notification=event.notification_id)
            labels = json.loads(incident_state.row(conn, incident_id).labels)
            routing, routed = self._route(conn, incident_id, labels, now, with_targets=True)
            timeline.record_all(conn, [reopened, routed])
            return self._start(conn, incident_id, routing, now, event.counted)
        if action == "update" and event.decision.page:
            return self._update(conn, event, timeline)
        if action == "resolve":
            escalations = Escalations(conn.engine)
            escalations.delete(conn, incident_id)
            timeline.record(conn, incident_id, now, "resolved", ALERTMANAGER)
            return page_contacts(conn, incident_state.row(conn, incident_id), escalations.paged_contacts(conn, incident_id),
                                 "resolved", now, f"resolved:{ALERTMANAGER}:{event.notification_id}")
        return 0

    def _route(self, conn: sa.Connection, incident_id: int, labels: dict, now: float,
               with_targets: bool) -> tuple[IncidentRouting, dict]:
        """Route the incident (policy, priority, team, SLA due times, breaches cleared); the routing and
        its `routed` timeline row (the caller writes it)."""
        routing = route_incident(self._oncall, labels)
        sla = sla_for(self._oncall, routing.priority)
        incident_state.set_routing(
            conn, incident_id, routing.priority, routing.team, routing.policy,
            now + sla.ack_within_s if with_targets and sla.ack_within_s is not None else None,
            now + sla.resolve_within_s if with_targets and sla.resolve_within_s is not None else None)
        return routing, event_row(incident_id, now, "routed", policy=routing.policy, priority=routing.priority,
                                  team=routing.team)

    def _start(self, conn: sa.Connection, incident_id: int, routing: IncidentRouting, now: float,
               counted: AfterCommit) -> int:
        """Open the escalation due now and run its first step in this transaction (its counts in
        `counted`, run once the ingest committed)."""
        if routing.policy is None:
            return 0
        Escalations(conn.engine).put(conn, incident_id, routing.policy, now)
        return run_step(conn, self._oncall, Escalation(incident_id, routing.policy, 0, 0, 0, ESCALATE, now), now,
                        counted, self._links, self._metrics)

    def _page_first_tier_resolved(self, conn: sa.Connection, incident_id: int, routing: IncidentRouting,
                                  now: float) -> int:
        if routing.policy is None:
            return 0
        try:
            people = tier_people(self._oncall, routing.policy, 0, now)
        except UnknownPolicy:
            return 0
        first = Escalation(incident_id, routing.policy, 0, 0, 0, ESCALATE, now)
        incident = incident_state.row(conn, incident_id)
        return page_people(conn, self._oncall, incident, first, people, now, page_status="resolved")

    def _update(self, conn: sa.Connection, event: IngestEvent, timeline: Timeline) -> int:
        """A new firing joined the incident: the people of the tier paged last get the updated page now."""
        incident_id, now = event.incident_id, event.now
        new = sorted(alert.labels.get("alertname", "?") for alert in event.payload.alerts if alert.status == "firing")
        timeline.record(conn, incident_id, now, "alert_added", ALERTMANAGER, alerts=new,
                        notification=event.notification_id)
        escalations = Escalations(conn.engine)
        tier = escalations.last_paged_tier(conn, incident_id)
        contacts = escalations.paged_contacts(conn, incident_id, tier=tier) if tier is not None else []
        return page_contacts(conn, incident_state.row(conn, incident_id), contacts, "firing", now,
                             f"update:{event.notification_id}", self._links)
