"""Response targets (per priority: time to acknowledge, time to resolve) and their breaches.

On each engine pass, a firing incident past its `ack_due_at` and still unacknowledged, or past its
`resolve_due_at`, is marked breached (`ack_breached_at` / `resolve_breached_at`, once), gets an
`sla_breach` event, counts in `vigil_notifier_sla_breaches_total{priority,target}`, and its escalation
moves to the next tier, due now, instead of waiting out the tier's `escalate_after` — but never sooner
after the tier paged last than the shorter of that tier's `escalate_after` and the acknowledge target,
so a tier paged just before the breach is not followed half a second later by the next. An acknowledged
incident that misses its resolve target is recorded and counted; its re-page timer stays in charge.
A ticket (`notify: ticket`) is never escalated: its breach is recorded and counted, nothing moves.

While a maintenance window has paused the escalation (`pause.py`) nobody can be paged, so the
acknowledge target is not breached: it counts again from now (the pause's re-checks keep moving it,
and the resume restarts it), whether the engine passed every few seconds or the notifier was down for
a while. A resolve target past due meanwhile is recorded, without moving the escalation.
"""

from __future__ import annotations

import json

from vigil.notifier.core.after_commit import AfterCommit
from vigil.notifier.engine.actions import move_to_next_tier
from vigil.notifier.engine.pause import paused_by, restart_ack_target
from vigil.notifier.metrics import SLA_TARGETS, NotifierMetrics
from vigil.notifier.store import Store, incident_state
from vigil.notifier.store.engine import reading
from vigil.common.times import rfc3339
from vigil.oncall.model import OncallConfig
from vigil.oncall.plan import UnknownPolicy, is_ticket, policy_spec, sla_for

BATCH = 100


def check(store: Store, oncall: OncallConfig, now: float, metrics: NotifierMetrics | None = None) -> int:
    """Mark every incident whose target passed by `now` (a paused escalation's acknowledge target is
    moved on instead); returns how many breaches were recorded."""
    found = 0
    for which in SLA_TARGETS:
        with reading(store.engine) as conn:
            overdue = incident_state.overdue(conn, which, now, BATCH)
        for incident_id in overdue:
            counted = AfterCommit()
            with store.engine.begin() as conn:
                found += _breach(conn, store, incident_id, which, now, metrics, counted, oncall)
            counted.run()
    if found:
        store.escalations.changed()
    return found


def _breach(conn, store: Store, incident_id: int, which: str, now: float, metrics: NotifierMetrics | None,
            counted: AfterCommit, oncall: OncallConfig) -> int:
    incident = incident_state.row(conn, incident_id, lock=True)
    due = getattr(incident, f"{which}_due_at") if incident is not None else None
    if (incident is None or incident.status != "firing" or due is None or due > now
            or getattr(incident, f"{which}_breached_at") is not None
            or (which == "ack" and incident.acknowledged_at is not None)):
        return 0  # handled meanwhile (another notifier, an ack)
    paused = paused_by(conn, incident_id) is not None
    if which == "ack" and paused:
        restart_ack_target(conn, oncall, incident, now)  # nobody could be paged: no breach
        return 0
    incident_state.update(conn, incident_id, **{f"{which}_breached_at": now})
    store.timeline.record(conn, incident_id, now, "sla_breach", which=which, priority=incident.priority,
                          due_at=rfc3339(due))
    if metrics is not None:
        counted.add(metrics.sla_breaches.labels(incident.priority or "none", which).inc)
    if incident.acknowledged_at is None and not paused and not is_ticket(json.loads(incident.labels)):
        # (a maintenance window's pause holds it where it is; a ticket is never escalated)
        move_to_next_tier(conn, store, incident, now, _spaced(conn, store, oncall, incident, now))
    return 1


def _spaced(conn, store: Store, oncall: OncallConfig, incident, now: float) -> float:
    """When a missed acknowledge target pages the next tier: now, but never sooner after the tier paged
    last than the shorter of that tier's `escalate_after` and the acknowledge target (a tier paged half a
    second before the breach gets its chance, as the policy spaces tiers)."""
    last = store.escalations.last_paged(conn, incident.id)
    escalation = store.escalations.get(conn, incident.id)
    policy = escalation.policy if escalation is not None else incident.policy
    if last is None or policy is None:
        return now
    try:
        tiers = policy_spec(oncall, policy).tiers
    except UnknownPolicy:
        return now
    tier, paged_at = last
    spacing = tiers[tier].escalate_after_s if 0 <= tier < len(tiers) else 0.0
    within = sla_for(oncall, incident.priority).ack_within_s if incident.priority else None
    return max(now, paged_at + min(spacing, within if within is not None else spacing))
