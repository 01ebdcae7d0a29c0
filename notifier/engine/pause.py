"""Escalation paused by a maintenance window: while a window holds an incident's pages (the mute stage's
`window_holding`), its escalation does not move on, and it picks up where it stopped once the window
is over.

- The step due when a window first holds the incident is paged as usual (the mute stage holds those
  pages: `page_held`), then the escalation pauses at that step instead of moving on: one
  `escalation_paused` event (the window's id, reason, author, end), no further tiers, repeats, rounds
  or `policy_exhausted`. The row keeps its position and is due again when the window ends, or
  `HOLD_RECHECK_S` sooner (a window taken out of the on-call file is noticed within that time; one
  ended early through the API or the console makes the paused escalations due at once:
  `Escalations.paused_due_now`). Another window holding the incident after the first
  one ended is one more `escalation_paused` event, still without a page.
- An acknowledgement ends the pause (the escalation stops; its re-page timer runs as usual), and it
  does not expire while a window holds its incident: the re-page that would have come then pauses
  instead (`escalation_paused`, no page).
- When no window holds the incident any more: `escalation_resumed`, and an unacknowledged incident's
  step is run now (the tier it stopped at is paged again: its pages were held, nobody heard of them),
  the next steps timed from then, and its acknowledge target too (not breached while paused: an SLA
  breach would page the next tier at once). An acknowledged incident is not paged: its
  acknowledgement lasts `repage_acknowledged_after` again from the resume. A resolved incident has no
  escalation to resume.

Whether an escalation is paused is read from the timeline (the newest of `escalation_paused`,
`escalation_resumed` and the events that end a pause): no column of its own.
"""

from __future__ import annotations

import json

import sqlalchemy as sa

from vigil.notifier.delivery.stages import Held, window_holding
from vigil.notifier.store import incident_state
from vigil.notifier.core.escalation_steps import REPAGE, Escalation
from vigil.notifier.store.escalations import Escalations
from vigil.notifier.store.maintenance import Maintenance
from vigil.notifier.store.timeline import PAUSE_KINDS, PAUSED, RESUMED, Timeline
from vigil.oncall.model import OncallConfig
from vigil.oncall.plan import PolicySpec, sla_for

HOLD_RECHECK_S = 30.0  # a held escalation looks again this often whether its window is still on


def holding(conn: sa.Connection, oncall: OncallConfig, incident, now: float) -> Held | None:
    """The maintenance window holding `incident`'s pages at `now` (read on `conn`), or None."""
    return window_holding(Maintenance(conn.engine), oncall, json.loads(incident.labels), now, conn)


def paused_by(conn: sa.Connection, incident_id: int) -> dict | None:
    """The `escalation_paused` event the incident's escalation is paused by, or None when it is not: an
    acknowledgement (the escalation stops: only its re-page is left), a resolve and a reopen end a pause."""
    last = Timeline(conn.engine).latest(conn, incident_id, PAUSE_KINDS)
    return last if last is not None and last["kind"] == PAUSED else None


def before_step(conn: sa.Connection, oncall: OncallConfig, spec: PolicySpec, incident, escalation: Escalation,
                held: Held | None, now: float) -> bool:
    """Whether the due `escalation` is done with for now: postponed while paused, or an acknowledged
    incident's re-page put off on resume. False: the step runs (then `pause_after_paging`)."""
    paused = paused_by(conn, incident.id)
    acknowledged = escalation.mode == REPAGE and incident.acknowledged_at is not None
    after = spec.repage_acknowledged_after_s
    expired = acknowledged and after is not None and incident.acknowledged_at + after <= now
    if held is None:
        if paused is None:
            return False
        Timeline(conn.engine).record(conn, incident.id, now, RESUMED, window=paused["detail"].get("window"),
                                     paused_for_s=round(now - paused["at"], 3),
                                     tier=None if acknowledged else escalation.tier)
        restart_ack_target(conn, oncall, incident, now)
        if expired:  # held past its expiry: the acknowledgement lasts its full time again from now
            Escalations(conn.engine).put(conn, incident.id, escalation.policy, now + after, mode=REPAGE)
            return True
        return False
    if acknowledged and not expired:
        return False  # the acknowledgement still stands: the re-page timer goes on as usual
    if paused is None and not acknowledged:
        return False  # the first step held: paged (the pages are held), then paused after it
    if paused is None or paused["detail"].get("window") != held.detail.get("window"):
        _record_pause(conn, incident.id, held, now, None if acknowledged else escalation.tier)
    _postpone(conn, oncall, incident, escalation, held, now)
    return True


def pause_after_paging(conn: sa.Connection, oncall: OncallConfig, incident, step: Escalation, held: Held | None,
                       now: float) -> bool:
    """After paging `step` (its position): while `held`, the escalation pauses there (it is paged again
    once the window is over) instead of moving on; returns whether it paused."""
    if held is None:
        return False
    _record_pause(conn, step.incident_id, held, now, step.tier)
    _postpone(conn, oncall, incident, step, held, now)
    return True


def _record_pause(conn: sa.Connection, incident_id: int, held: Held, now: float, tier: int | None) -> None:
    Timeline(conn.engine).record(conn, incident_id, now, PAUSED, tier=tier, **held.detail)


def _postpone(conn: sa.Connection, oncall: OncallConfig, incident, escalation: Escalation, held: Held,
              now: float) -> None:
    """The escalation waits where it is, due again when the window ends or at the next re-check."""
    due = min(held.until, now + HOLD_RECHECK_S)
    Escalations(conn.engine).put(conn, escalation.incident_id, escalation.policy, due, tier=escalation.tier,
                                 repeat=escalation.repeat, round=escalation.round, mode=escalation.mode)
    restart_ack_target(conn, oncall, incident, due)


def restart_ack_target(conn: sa.Connection, oncall: OncallConfig, incident, start: float) -> None:
    """An unacknowledged incident's acknowledge target counts from `start` (a paused escalation's next
    look, the resume), so it is not breached while nobody could be paged, nor at once after."""
    if incident.acknowledged_at is not None or incident.ack_due_at is None or incident.ack_breached_at is not None:
        return
    within = sla_for(oncall, incident.priority).ack_within_s
    if within is not None:
        incident_state.update(conn, incident.id, ack_due_at=start + within)
