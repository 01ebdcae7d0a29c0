"""An incident's escalation, begun, moved on and ended in the caller's transaction:

- by a stored notification (`EngineIntake.on_ingest`, the group commit's hand-off to the engine):
  - open: route the incident (`route_incident`: policy, priority, team), set its SLA due times
    (`sla_for`), timeline `opened` + `routed`, and start its escalation: the first tier is paged in this
    same transaction (so the webhook's answer means "paged"), the next step waits in `escalations`. A
    symptom of an open incident joins it instead, and one whose cause may still fire waits for it; a new
    incident first gathers the waiting symptoms it causes (`causes.py`);
  - reopen (fired again within `incidents.reopen_within`): timeline `reopened`, fresh SLA due times, the
    escalation restarts at the first tier;
  - update with a new firing: timeline `alert_added`; the people of the tier paged last get the
    updated page now;
  - resolve: the escalation ends, timeline `resolved` (actor `alertmanager`), and a resolved page goes
    to every (person, contact) that had a firing page; with `incidents.resolve_after` it first waits
    (timeline `resolving`; the escalation waits too), and firing again meanwhile is `steady`, no page;
  - record (resolved, never heard firing): routed, and the first tier gets the resolved page;
- by the clock (`run_step`, for each due row the escalation loop claims, `escalation_loop.py`): page
  the tier's people now (`tier_people`, then each person's contact plan), record it on the timeline, and
  set the next position (`core/escalation_steps.py`) due after the tier's `escalate_after`. A tier with
  nobody on call is `tier_empty` and the next tier is paged at once; after the last tier of the last
  round the policy is `policy_exhausted`. A `repage` row (set by an acknowledgement) expires the
  acknowledgement (`repage.py`) and restarts the policy at the first tier. While a maintenance window
  holds the incident's pages, the escalation pauses at the step it reached (`pause.py`).

A ticket (its alerts say `notify: ticket`) is paged to its first tier only, then its escalation ends;
its pages wait for working hours (`vigil.oncall.plan.contact_plan`).

Each page is made by `paging.py` and written with `Outbox.enqueue_pages`; its `page_key` names the step,
so no page is enqueued twice, whichever notifier gets there. A first-version on-call file routes to an
implicit one-tier policy (`target:NAME`), so it pages as it always did: the target's channels that want
the severity, at once, no escalation.
"""

from __future__ import annotations

import json
import logging
from dataclasses import replace
from functools import partial

import sqlalchemy as sa

from vigil.common.durations import format_duration
from vigil.common.times import rfc3339
from vigil.notifier.core.after_commit import AfterCommit
from vigil.notifier.core.escalation_steps import ESCALATE, REPAGE, Escalation, after_page, normalized
from vigil.notifier.engine import causes, pause, repage
from vigil.notifier.engine.paging import LinkMaker, contact_pages, tier_pages
from vigil.notifier.metrics import NotifierMetrics
from vigil.notifier.store import incident_state
from vigil.notifier.store.escalations import Escalations
from vigil.notifier.store.notifications import IngestEvent
from vigil.notifier.store.outbox import Outbox
from vigil.notifier.store.timeline import Timeline
from vigil.notifier.store.timeline import event as event_row
from vigil.oncall.model import OncallConfig
from vigil.oncall.plan import (IncidentRouting, PolicySpec, UnknownPolicy, is_ticket, policy_spec, route_incident,
                               sla_for, tier_people)

log = logging.getLogger(__name__)
ALERTMANAGER = "alertmanager"
EMPTY_POLICY_RETRY_S = 60.0  # every tier empty: look again for someone on call this much later


def run_step(conn: sa.Connection, oncall: OncallConfig, escalation: Escalation, now: float, counted: AfterCommit,
             links: LinkMaker | None = None, metrics: NotifierMetrics | None = None) -> int:
    """Handle `escalation` (claimed on `conn`, due by `now`); returns how many pages were enqueued.
    With `metrics`, the tier paged is counted in `counted`, to be run once `conn`'s transaction commits."""
    escalations, timeline = Escalations(conn.engine), Timeline(conn.engine)
    incident = incident_state.row(conn, escalation.incident_id, lock=True)
    if incident is None or incident.status == "resolved":
        escalations.delete(conn, escalation.incident_id)
        return 0
    try:
        spec = policy_spec(oncall, escalation.policy)
    except UnknownPolicy:
        log.warning("incident %d: policy %r is no longer in the on-call config; its escalation ends",
                    incident.id, escalation.policy)
        escalations.delete(conn, incident.id)
        return 0
    if incident.resolving_at is not None:  # its alerts resolved and the resolution waits: no page meanwhile
        escalations.put(conn, incident.id, escalation.policy, max(incident.resolving_at, escalation.due_at),
                        tier=escalation.tier, repeat=escalation.repeat, round=escalation.round, mode=escalation.mode)
        return 0
    alone = None
    if incident.cause_id is not None:  # a symptom held after its cause resolved (`causes.after_cause_resolved`)
        alone = causes.stand_alone(conn, incident, now)
        if alone is None:
            return 0
        incident = incident_state.row(conn, incident.id, lock=True)
    held = pause.holding(conn, oncall, incident, now)
    if pause.before_step(conn, oncall, spec, incident, escalation, held, now):
        return 0
    if alone is not None:
        why = alone
    elif escalation.mode == REPAGE and incident.acknowledged_at is not None:
        escalation = repage.expire_acknowledgement(conn, oncall, spec, incident, escalation, now)
        if escalation is None:
            return 0
        why = (f"acknowledged by {incident.acknowledged_by} {format_duration(float(int(now - incident.acknowledged_at)))} "
               f"ago and still firing")
    else:
        why = _why_escalated(conn, oncall, spec, incident, escalation)
    position = normalized(spec, escalation.tier, escalation.repeat, escalation.round)
    skipped: list[str] = []
    for _ in spec.tiers:
        if position is None:
            break
        tier, repeat, round = position
        people = tier_people(oncall, spec.name, tier, now)
        step = replace(escalation, tier=tier, repeat=repeat, round=round, mode=ESCALATE)
        if not people:
            timeline.record(conn, incident.id, now, "tier_empty", tier=tier, tier_name=spec.tiers[tier].name,
                            round=round)
            skipped.append(spec.tiers[tier].name)
            position = normalized(spec, tier + 1, 0, round)
            continue
        if skipped:
            why = "; ".join([*([why] if why else []), f"nobody on call in {', '.join(skipped)}"])
        pages = tier_pages(conn, oncall, incident, step, people, now, links, why=why)
        added = Outbox(conn.engine).enqueue_pages(conn, incident.id, "firing", pages, now)
        # a tier whose every page is held (`hold_until: working_hours`) is reached when the first goes out:
        # its wait, and the acknowledge target, count from then (nobody could answer before)
        reached = min((now + page.delay_s for page in pages), default=now)
        timeline.record(conn, incident.id, now, "tier_paged", tier=tier, tier_name=spec.tiers[tier].name,
                        people=people, repeat=repeat, round=round, pages=added,
                        **({"why": why} if why else {}),  # why this tier: "not acknowledged within 5m by ana (DRI)"
                        **({"held_until": rfc3339(reached)} if reached > now else {}))
        if reached > now:
            pause.restart_ack_target(conn, oncall, incident, reached)
        if metrics is not None:
            counted.add(partial(_count_page, metrics, tier, max(0.0, now - escalation.due_at)))
        if pause.pause_after_paging(conn, oncall, incident, step, held, now):
            return added  # a maintenance window holds the incident: the escalation waits at this step
        following = after_page(spec, tier, repeat, round)
        if is_ticket(json.loads(incident.labels)):
            _exhausted(conn, incident.id, now, reason="a ticket: its first tier only, never escalated")
        elif following is None:
            _exhausted(conn, incident.id, now)
        else:
            escalations.put(conn, incident.id, spec.name, reached + spec.tiers[tier].escalate_after_s,
                            tier=following[0], repeat=following[1], round=following[2])
        return added
    if position is None:
        _exhausted(conn, incident.id, now)
    else:  # every tier was empty: try again later rather than spin
        escalations.put(conn, incident.id, spec.name, now + EMPTY_POLICY_RETRY_S, tier=position[0],
                        repeat=position[1], round=position[2])
    return 0


def _why_escalated(conn: sa.Connection, oncall: OncallConfig, spec: PolicySpec, incident,
                   escalation: Escalation) -> str | None:
    """Why `escalation` pages beyond the policy's first page, as the people paged read it: the last thing
    that moved it — the previous page unanswered, a missed acknowledge target, a person's "escalate now"."""
    if (escalation.tier, escalation.repeat, escalation.round) == (0, 0, 0):
        return None  # the first page: the alert is the reason
    timeline = Timeline(conn.engine)
    last = timeline.latest(conn, incident.id, ("tier_paged", "escalated", "sla_breach"))
    if last is not None and last["kind"] == "sla_breach" and last["detail"].get("which") != "ack":
        # a missed resolve target moves nothing: what moved the escalation came before it
        last = timeline.latest(conn, incident.id, ("tier_paged", "escalated"))
    if last is None:
        return None
    if last["kind"] == "escalated":
        return f"escalated by {last['actor']}"
    if last["kind"] == "sla_breach":
        target = sla_for(oncall, incident.priority).ack_within_s if incident.priority else None
        within = f" ({format_duration(target)})" if target is not None else ""
        return f"the {incident.priority + ' ' if incident.priority else ''}target to acknowledge{within} passed"
    tier = last["detail"].get("tier")
    if not isinstance(tier, int) or not 0 <= tier < len(spec.tiers):
        return None
    people = ", ".join(last["detail"].get("people") or []) or "nobody"
    return (f"not acknowledged within {format_duration(spec.tiers[tier].escalate_after_s)} by {people} "
            f"({spec.tiers[tier].name})")


def resolved_pages(conn: sa.Connection, incident_id: int, now: float, key: str, **detail) -> int:
    """Alertmanager resolved the incident (already marked resolved on `conn`): its escalation ends, the
    timeline says so, and every (person, contact) its firing pages reached gets the resolved page."""
    escalations = Escalations(conn.engine)
    escalations.delete(conn, incident_id)
    Timeline(conn.engine).record(conn, incident_id, now, "resolved", ALERTMANAGER, **detail)
    causes.after_cause_resolved(conn, incident_id, now)
    pages = contact_pages(conn, incident_state.row(conn, incident_id), escalations.paged_contacts(conn, incident_id),
                          "resolved", now, key)
    return Outbox(conn.engine).enqueue_pages(conn, incident_id, "resolved", pages, now)


def _count_page(metrics: NotifierMetrics, tier: int, delay_s: float) -> None:
    metrics.escalations.labels(str(tier)).inc()
    metrics.escalation_delay.observe(delay_s)


def _exhausted(conn: sa.Connection, incident_id: int, now: float, **detail) -> None:
    Escalations(conn.engine).delete(conn, incident_id)
    Timeline(conn.engine).record(conn, incident_id, now, "policy_exhausted", **detail)


class EngineIntake:
    """The on-call engine's `IncidentPlanner`."""

    def __init__(self, oncall: OncallConfig, links: LinkMaker | None = None, metrics: NotifierMetrics | None = None):
        self._oncall = oncall
        self._links = links
        self._metrics = metrics
        self.reopen_within_s = float(oncall.incidents.reopen_within or 0.0)
        self.resolve_after_s = float(oncall.incidents.resolve_after or 0.0)

    def on_ingest(self, event: IngestEvent) -> int:
        action, conn, incident_id, now = event.decision.action, event.conn, event.incident_id, event.now
        timeline = Timeline(conn.engine)
        if action in ("open", "record"):
            # a new incident: its labels are this notification's common labels, as just stored
            opened = event_row(incident_id, now, "opened", ALERTMANAGER, title=event.title)
            symptom = causes.symptom_of(event.payload) if action == "open" else None
            cause_id = causes.cause_incident(conn, symptom, event.payload, incident_id, now) if symptom else None
            routing, routed = self._route(conn, incident_id, event.payload.commonLabels, now,
                                          with_targets=action == "open" and cause_id is None)
            if action == "open":
                timeline.record_all(conn, [opened, routed])
                if cause_id is not None:  # its cause's incident is open: it joins it, nobody is paged
                    causes.join(conn, incident_id, cause_id, now, event.title)
                    return 0
                # the held symptoms it is a cause of join it now, even while it waits for a cause of its
                # own (XID 64's alert waits for the remap failure, which waits for a GPU off the bus)
                causes.gather(conn, incident_id, event.payload, now)
                if symptom is not None and symptom.wait_s > 0:  # its cause may fire later: wait for it
                    until = causes.hold(conn, incident_id, symptom, now)
                    if routing.policy is not None:
                        Escalations(conn.engine).put(conn, incident_id, routing.policy, until)
                    return 0
                return self._start(conn, incident_id, routing, now, event.counted)
            timeline.record_all(conn, [opened, routed, event_row(incident_id, now, "resolved", ALERTMANAGER)])
            return self._page_first_tier_resolved(conn, incident_id, routing, now)
        if action == "reopen":
            reopened = event_row(incident_id, now, "reopened", ALERTMANAGER, notification=event.notification_id)
            incident = incident_state.row(conn, incident_id)
            if causes.cause_firing(conn, incident):  # still a symptom of a firing cause: no page
                timeline.record_all(conn, [reopened])
                return 0
            if incident.cause_id is not None:  # its cause is over: it stands alone now
                incident_state.update(conn, incident_id, cause_id=None)
            labels = json.loads(incident.labels)
            routing, routed = self._route(conn, incident_id, labels, now, with_targets=True)
            timeline.record_all(conn, [reopened, routed])
            return self._start(conn, incident_id, routing, now, event.counted)
        if action == "update" and event.decision.page:
            return self._update(conn, event, timeline)
        if action == "resolve":
            incident = incident_state.row(conn, incident_id)
            if incident.status == "firing":  # `resolve_after`: the resolution waits (settle.py ends it)
                timeline.record(conn, incident_id, now, "resolving", ALERTMANAGER,
                                until=rfc3339(incident.resolving_at))
                return 0
            return resolved_pages(conn, incident_id, now, f"resolved:{ALERTMANAGER}:{event.notification_id}")
        if action == "steady":  # fired again while its resolution waited: still one incident, no page
            timeline.record(conn, incident_id, now, "steady", ALERTMANAGER, notification=event.notification_id)
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
                                  team=routing.team, **({"ticket": True} if routing.ticket else {}))

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
        pages = tier_pages(conn, self._oncall, incident, first, people, now, page_status="resolved")
        return Outbox(conn.engine).enqueue_pages(conn, incident_id, "resolved", pages, now)

    def _update(self, conn: sa.Connection, event: IngestEvent, timeline: Timeline) -> int:
        """A new firing joined the incident: the people of the tier paged last get the updated page now."""
        incident_id, now = event.incident_id, event.now
        new = sorted(alert.labels.get("alertname", "?") for alert in event.payload.alerts if alert.status == "firing")
        timeline.record(conn, incident_id, now, "alert_added", ALERTMANAGER, alerts=new,
                        notification=event.notification_id)
        escalations = Escalations(conn.engine)
        tier = escalations.last_paged_tier(conn, incident_id)
        contacts = escalations.paged_contacts(conn, incident_id, tier=tier) if tier is not None else []
        pages = contact_pages(conn, incident_state.row(conn, incident_id), contacts, "firing", now,
                              f"update:{event.notification_id}", self._links)
        return Outbox(conn.engine).enqueue_pages(conn, incident_id, "firing", pages, now)
