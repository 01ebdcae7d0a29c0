"""What people do to an incident: acknowledge, resolve, add a note, escalate now, reopen, mark noisy.

Each is one transaction on the store at the time `now` (the caller's clock), recorded on the timeline
with who did it, and returns the incident as `store.notifications.incident` shows it. An unknown
incident raises `IncidentNotFound` (the API answers 404); a transition that cannot happen (acknowledge
a resolved incident, resolve one twice …) raises `TransitionRefused` with the reason (409).

- acknowledge: stops the escalation; the engine re-pages after the policy's
  `repage_acknowledged_after` (the escalation waits in mode `repage`; pending firing pages are muted by
  the delivery pipeline's mute stage);
- resolve: ends the escalation and pages "resolved" to every (person, contact) that had a firing page;
- escalate now: the next tier is paged at once (an acknowledgement is handed on with it: cleared; while
  a maintenance window holds the incident, it is the tier paged when the window is over);
- reopen: a resolved incident fires again, unacknowledged, from the policy's first tier;
- mark: a person's verdict on the page — noisy, not actionable, or (withdrawing it) actionable.
"""

from __future__ import annotations

import sqlalchemy as sa

from vigil.notifier.engine import causes
from vigil.notifier.engine.paging import contact_pages
from vigil.notifier.engine.pause import paused_by
from vigil.notifier.engine.repage import lapse_acknowledgement
from vigil.notifier.core.escalation_steps import next_tier
from vigil.notifier.core.incidents import MAX_NOTE_CHARS, VERDICTS
from vigil.notifier.store import Store, incident_state
from vigil.notifier.core.escalation_steps import REPAGE
from vigil.oncall.model import OncallConfig



class IncidentNotFound(LookupError):
    def __init__(self, incident_id: int):
        super().__init__(f"no incident {incident_id}")
        self.incident_id = incident_id


class TransitionRefused(Exception):
    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


def acknowledge(store: Store, incident_id: int, by: str, now: float) -> dict:
    with store.engine.begin() as conn:
        incident = _firing(conn, incident_id, "acknowledge")
        if incident.acknowledged_at is not None:
            raise TransitionRefused(f"incident {incident_id} is already acknowledged by {incident.acknowledged_by}")
        incident_state.acknowledge(conn, incident_id, by, now)
        store.timeline.record(conn, incident_id, now, "acknowledged", by)
        escalation = store.escalations.get(conn, incident_id)
        policy = escalation.policy if escalation is not None else incident.policy
        if policy is not None:  # the engine sets it to the expiry, or drops it if the policy never re-pages
            store.escalations.put(conn, incident_id, policy, now, mode=REPAGE)
    store.escalations.changed()
    return store.notifications.incident(incident_id)


def resolve(store: Store, incident_id: int, by: str, now: float, reason: str | None = None) -> dict:
    """`reason`: why, on the timeline and in the resolved page (the notifier's own resolutions say it)."""
    with store.engine.begin() as conn:
        incident = _firing(conn, incident_id, "resolve")
        incident_state.resolve(conn, incident_id, by, now)
        store.escalations.delete(conn, incident_id)
        store.timeline.record(conn, incident_id, now, "resolved", by, **({"reason": reason} if reason else {}))
        causes.after_cause_resolved(conn, incident_id, now)
        pages = contact_pages(conn, incident, store.escalations.paged_contacts(conn, incident_id), "resolved", now,
                              f"resolved:{by}:{now!r}", note=f"resolved by {by}" + (f": {reason}" if reason else ""))
        store.outbox.enqueue_pages(conn, incident_id, "resolved", pages, now)
    store.escalations.changed()
    return store.notifications.incident(incident_id)


def add_note(store: Store, incident_id: int, by: str, text: str, now: float) -> dict:
    """A note on the timeline, kept whole: one with no text, or longer than MAX_NOTE_CHARS, is refused (the
    API's body model says the same), never cut."""
    text = text.strip()
    if not text:
        raise TransitionRefused("a note needs some text")
    if len(text) > MAX_NOTE_CHARS:
        raise TransitionRefused(f"a note is at most {MAX_NOTE_CHARS:,} characters; this one has {len(text):,}")
    with store.engine.begin() as conn:
        _existing(conn, incident_id)
        store.timeline.record(conn, incident_id, now, "note", by, text=text)
    return store.notifications.incident(incident_id)


def mark(store: Store, incident_id: int, by: str, verdict: str, now: float, reason: str | None = None) -> dict:
    """A person's verdict on the incident's page (timeline `marked`), in any state: the newest mark of an
    incident counts in each rule's noise score (`vigil report oncall`, `vigil rules backtest`)."""
    if verdict not in VERDICTS:
        raise TransitionRefused(f"a verdict is one of {', '.join(VERDICTS)}, not {verdict!r}")
    with store.engine.begin() as conn:
        _existing(conn, incident_id)
        store.timeline.record(conn, incident_id, now, "marked", by, verdict=verdict,
                              **({"reason": reason[:MAX_NOTE_CHARS]} if reason else {}))
    return store.notifications.incident(incident_id)


def escalate_now(store: Store, incident_id: int, by: str, now: float, oncall: OncallConfig) -> dict:
    """The next tier paged now; an acknowledgement lapses, its acknowledge target restarting from now
    (`oncall`'s priorities say how long it is)."""
    with store.engine.begin() as conn:
        incident = _firing(conn, incident_id, "escalate")
        if incident.policy is None and store.escalations.get(conn, incident_id) is None:
            raise TransitionRefused(f"incident {incident_id} has no escalation policy: there is nobody to escalate to")
        if incident.acknowledged_at is not None:
            lapse_acknowledgement(conn, oncall, incident, now)
        tier = move_to_next_tier(conn, store, incident, now)
        store.timeline.record(conn, incident_id, now, "escalated", by, to_tier=tier)
    store.escalations.changed()
    return store.notifications.incident(incident_id)


def reopen(store: Store, incident_id: int, by: str, now: float) -> dict:
    with store.engine.begin() as conn:
        incident = _existing(conn, incident_id)
        if incident.status != "resolved":
            raise TransitionRefused(f"incident {incident_id} is not resolved: nothing to reopen")
        other = incident_state.firing_in_group(conn, incident.group_key)
        if other is not None:
            raise TransitionRefused(f"incident {other} of the same alert group is firing: work on that one")
        incident_state.reopen(conn, incident_id)
        store.timeline.record(conn, incident_id, now, "reopened", by)
        if incident.policy is not None:
            store.escalations.put(conn, incident_id, incident.policy, now)
    store.escalations.changed()
    return store.notifications.incident(incident_id)


def move_to_next_tier(conn: sa.Connection, store: Store, incident, now: float, due_at: float | None = None) -> int | None:
    """Set the incident's escalation to the tier after the one paged last, due at `due_at` (default: now);
    returns that tier (None: the incident has no policy). The engine pages it when due."""
    escalation = store.escalations.get(conn, incident.id)
    policy = escalation.policy if escalation is not None else incident.policy
    if policy is None:
        return None
    moved = next_tier(incident.id, escalation, store.escalations.last_paged_tier(conn, incident.id), policy, now,
                      paused=paused_by(conn, incident.id) is not None)
    store.escalations.put(conn, incident.id, policy, now if due_at is None else due_at, tier=moved.tier,
                          round=moved.round)
    return moved.tier


def _existing(conn: sa.Connection, incident_id: int):
    incident = incident_state.row(conn, incident_id, lock=True)
    if incident is None:
        raise IncidentNotFound(incident_id)
    return incident


def _firing(conn: sa.Connection, incident_id: int, verb: str):
    incident = _existing(conn, incident_id)
    if incident.status == "resolved":
        raise TransitionRefused(f"incident {incident_id} is resolved: nothing to {verb} (reopen it first: "
                                f"vigil incidents reopen {incident_id})")
    return incident
