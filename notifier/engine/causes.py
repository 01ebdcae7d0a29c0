"""One incident per cause: a symptom joins the open incident of its cause instead of paging.

An alert is a symptom when it carries the `symptom_of` annotation (`vigil.common.symptoms`, written by
the rule generator from the specs' `symptom_of`/`inhibits`). When a notification would open an
incident (`EngineIntake.on_ingest`):

- a symptom with an incident of one of its causes firing (its alerts' labels equal on the link's
  `equal`) **joins** it: the symptom's incident gets `cause_id` (the API's `part_of`) and timeline
  `joined`, the cause's incident `also_firing`; nobody is paged for it, now or when it resolves;
- a symptom whose cause is not firing is **held**: its first page waits `wait` seconds (`held_until`,
  timeline `held`) in case the cause fires later, as a cause with a longer `for` does;
- any new incident **gathers** the held symptoms it is a cause of: they join it before its own first
  page, which so goes out first and alone (the P1 of a cause before anything lower of it); a new
  incident that is held itself gathers too, and when it joins its own cause later its symptoms move
  with it (a remap failure gathers the XID 64 alert, and both join a GPU off the bus);
- a symptom that files a ticket and arrives within `AFTERMATH_S` of its cause's resolution (a rate over
  a 15-minute window outlives the fault; Alertmanager delivers what the cause inhibited once it ends)
  joins the cause's resolved incident as its **aftermath**: one fault, one ticket. A symptom that pages
  does so only when its alerts began before the cause resolved (its `for` ran out just after a quick
  repair: the same fault); one that began after the repair is a new fault and pages.
- a symptom joined to a cause that resolved (when it resolves, `after_cause_resolved`, or as its
  aftermath) is **held** until it has outlived the resolution by AFTERMATH_S (a ticket: twice that): one
  that resolves meanwhile was the same fault and never pages; one still firing then was not cured by the
  repair, **stands alone** and pages (`stand_alone`, from `escalation.run_step`), as Alertmanager sends
  an inhibited alert once the inhibiting one resolves. A cause of it that fires again keeps it joined.

Joined incidents are never chained: a symptom joins only an incident that joined nothing itself.
"""

from __future__ import annotations

import json

import sqlalchemy as sa

from vigil.common import symptoms
from vigil.common.durations import format_duration
from vigil.common.times import rfc3339
from vigil.common.symptoms import SymptomOf
from vigil.notifier.core.models import WebhookPayload
from vigil.notifier.schema import incidents
from vigil.notifier.store import incident_state
from vigil.notifier.store.escalations import Escalations
from vigil.notifier.store.notifications import labels_hold, latest_payload
from vigil.notifier.store.prepared import Prepared
from vigil.notifier.store.timeline import Timeline

CANDIDATES = 200  # the newest firing incidents of a cause's name looked at
AFTERMATH_S = 900.0  # a ticket-filing symptom this soon after its cause resolved is that fault's aftermath


def symptom_of(payload: WebhookPayload) -> SymptomOf | None:
    """The causes the notification's firing alerts declare (each alert's own), with the longest wait."""
    found = [s for s in (symptoms.decode(alert.annotations.get(symptoms.ANNOTATION))
                         for alert in payload.alerts if alert.status == "firing") if s is not None]
    if not found:
        return None
    causes = tuple(dict.fromkeys(cause for s in found for cause in s.causes))
    return SymptomOf(causes, max(s.wait_s for s in found))


def _labels_of(conn: sa.Connection, incident_id: int, common: dict, needed: set[str]) -> list[dict]:
    """The label sets to compare of the incident's alerts: its common labels when they hold every label
    `needed` (all its alerts share them), else each alert's of its latest notification."""
    if needed <= common.keys():
        return [common]
    payload = latest_payload(conn, incident_id)
    return [alert.labels for alert in payload.alerts] if payload is not None and payload.alerts else [common]


def _is_cause(symptom: SymptomOf, symptom_labels: list[dict], cause_labels: list[dict]) -> bool:
    return any(cause.matches(mine, theirs) for cause in symptom.causes
               for mine in symptom_labels for theirs in cause_labels)


def cause_incident(conn: sa.Connection, symptom: SymptomOf, payload: WebhookPayload, incident_id: int,
                   now: float | None = None) -> int | None:
    """The firing incident (not joined to another, not `incident_id`) of one of `symptom`'s causes; with
    `now` and when none fires, one resolved in the last AFTERMATH_S if the symptom files a ticket, or if
    its alerts began before that cause resolved (a `for` that ran out after the repair: the same fault)."""
    found = _cause(conn, symptom, payload, incident_id, incidents.c.status == "firing")
    if found is not None or now is None:
        return found
    ticket = payload.commonLabels.get("notify") == "ticket"
    began = min((alert.starts_at.timestamp() for alert in payload.alerts if alert.status == "firing"), default=now)
    return _cause(conn, symptom, payload, incident_id, resolved_since(now, None if ticket else began))


def resolved_since(now: float, began: float | None):
    """The incidents resolved in the last AFTERMATH_S (searched through `incidents_resolved`) and, for a
    symptom that pages (`began`: when its alerts began), only those still firing when it began."""
    resolved = sa.and_(incidents.c.status == "resolved", incidents.c.resolved_at >= now - AFTERMATH_S)
    return resolved if began is None else sa.and_(resolved, incidents.c.resolved_at >= began)


def _cause(conn: sa.Connection, symptom: SymptomOf, payload: WebhookPayload, incident_id: int, state) -> int | None:
    mine = [alert.labels for alert in payload.alerts if alert.status == "firing"]
    needed = {label for cause in symptom.causes for label in cause.equal}
    for name in dict.fromkeys(cause.alertname for cause in symptom.causes):
        rows = conn.execute(candidates_query(state, name, incident_id)).all()
        newest = sorted(((row.id, row.labels) for row in rows if row.cause_id is None), reverse=True)[:CANDIDATES]
        for cause_id, labels in newest:
            common = json.loads(labels)
            if common.get("alertname") == name and _is_cause(symptom, mine, _labels_of(conn, cause_id, common, needed)):
                return cause_id
    return None


def candidates_query(state, name: str, incident_id: int) -> sa.Select:
    """The incidents in `state` of alert `name`, but `incident_id`: (id, labels, cause_id). Those that
    joined a cause are left out, the newest kept, by the caller: with `cause_id IS NULL`, ORDER BY or
    LIMIT in the query SQLite (without statistics) walks an index over nearly every incident, where
    without them a firing cause is looked for among the firing incidents only (their partial index)."""
    return sa.select(incidents.c.id, incidents.c.labels, incidents.c.cause_id).where(
        state, incidents.c.id != incident_id, labels_hold("alertname", name))


def join(conn: sa.Connection, incident_id: int, cause_id: int, now: float, title: str | None = None) -> None:
    """Make incident `incident_id` a symptom of incident `cause_id`: no page of its own from now on. The
    symptoms that had joined `incident_id` (while it waited for its own cause) move to `cause_id`: joins
    are never chained."""
    incident_state.update(conn, incident_id, cause_id=cause_id, held_until=None, ack_due_at=None, resolve_due_at=None)
    conn.execute(sa.update(incidents).where(incidents.c.cause_id == incident_id).values(cause_id=cause_id))
    Escalations(conn.engine).delete(conn, incident_id)
    symptom = incident_state.row(conn, incident_id)
    cause = incident_state.row(conn, cause_id)
    timeline = Timeline(conn.engine)
    aftermath = {"aftermath": True} if cause.status == "resolved" else {}  # it outlived its cause
    timeline.record(conn, incident_id, now, "joined", cause=cause_id, cause_title=cause.title, **aftermath)
    timeline.record(conn, cause_id, now, "also_firing", incident=incident_id, title=title or symptom.title,
                    priority=symptom.priority, **aftermath)
    if aftermath and symptom.policy is not None and cause.resolved_at is not None:
        # it may outlive the cause's resolution only so long: then it is a fault of its own (`stand_alone`)
        _hold_past_cause(conn, incident_id, symptom.policy, json.loads(symptom.labels), cause_id,
                         cause.resolved_at, now)


def hold(conn: sa.Connection, incident_id: int, symptom: SymptomOf, now: float) -> float:
    """Hold the symptom's first page for its causes' wait; returns when it is due."""
    until = now + symptom.wait_s
    incident_state.update(conn, incident_id, held_until=until)
    Timeline(conn.engine).record(conn, incident_id, now, "held", until=rfc3339(until),
                                 causes=sorted({cause.alertname for cause in symptom.causes}))
    return until


# read on every new incident and every firing page: prepared statements (`Prepared`). The held incidents
# are found through `incidents_held` and those that joined a cause left out here: with `cause_id IS NULL`
# in the query, SQLite (without statistics) takes it for a selective lookup and walks `incidents_of_cause`
# over nearly every incident (most joined none), on every webhook post
_HELD = Prepared(sa.select(incidents.c.id, incidents.c.cause_id).where(
    incidents.c.held_until >= sa.bindparam("now"), incidents.c.status == "firing",
    incidents.c.id != sa.bindparam("cause_id")))  # sorted here: ORDER BY id has SQLite scan the table instead
_JOINED = Prepared(sa.select(incidents.c.id, incidents.c.labels).where(
    incidents.c.cause_id == sa.bindparam("cause_id"), incidents.c.status == "firing").order_by(incidents.c.id).limit(20))


def gather(conn: sa.Connection, cause_id: int, payload: WebhookPayload, now: float) -> list[int]:
    """Join the held symptoms that the new incident `cause_id` (of `payload`) is a cause of; their ids."""
    held = sorted(symptom_id for symptom_id, joined in _HELD.rows(conn, {"now": now, "cause_id": cause_id})
                  if joined is None)
    if not held:
        return []
    theirs = [alert.labels for alert in payload.alerts if alert.status == "firing"]
    joined = []
    for symptom_id in held:
        waiting = latest_payload(conn, symptom_id)
        symptom = symptom_of(waiting) if waiting is not None else None
        mine = [alert.labels for alert in waiting.alerts if alert.status == "firing"] if waiting else []
        if symptom is not None and _is_cause(symptom, mine, theirs):
            join(conn, symptom_id, cause_id, now)
            joined.append(symptom_id)
    return joined


def _outlived_by(labels: dict) -> float:
    """How long a symptom may outlive its cause's resolution before it is a fault of its own: AFTERMATH_S
    for a page, twice that for a ticket (a rate over a 15-minute window outlives the fault by that much)."""
    return 2 * AFTERMATH_S if labels.get("notify") == "ticket" else AFTERMATH_S


def _hold_past_cause(conn: sa.Connection, incident_id: int, policy: str, labels: dict, cause_id: int,
                     resolved_at: float, now: float) -> None:
    until = max(now, resolved_at + _outlived_by(labels))
    incident_state.update(conn, incident_id, held_until=until)
    Escalations(conn.engine).put(conn, incident_id, policy, until)
    Timeline(conn.engine).record(conn, incident_id, now, "held", until=rfc3339(until), after_cause=cause_id)


def after_cause_resolved(conn: sa.Connection, cause_id: int, now: float) -> list[int]:
    """The incident `cause_id` resolved: each symptom that joined it and still fires is held (its escalation
    due once it outlived the cause by `_outlived_by`); the ids of those held."""
    rows = conn.execute(sa.select(incidents.c.id, incidents.c.policy, incidents.c.labels)
                        .where(incidents.c.cause_id == cause_id, incidents.c.status == "firing",
                               incidents.c.policy.is_not(None))
                        .order_by(incidents.c.id)).all()
    for row in rows:
        _hold_past_cause(conn, row.id, row.policy, json.loads(row.labels), cause_id, now, now)
    return [row.id for row in rows]


def stand_alone(conn: sa.Connection, incident, now: float) -> str | None:
    """At its held escalation's due time, a symptom whose cause resolved and stayed resolved becomes a fault
    of its own (no `cause_id`, timeline `stands_alone`): why it pages. None when a cause of it fires (its
    own again, or a new incident of its cause: it joins that one) — its escalation ends, nobody is paged."""
    firing = incident.cause_id if cause_firing(conn, incident) else None
    if firing is None:
        latest = latest_payload(conn, incident.id)
        symptom = symptom_of(latest) if latest is not None else None
        firing = cause_incident(conn, symptom, latest, incident.id) if symptom is not None else None
        if firing is not None:
            join(conn, incident.id, firing, now)
    if firing is not None:
        Escalations(conn.engine).delete(conn, incident.id)
        incident_state.update(conn, incident.id, held_until=None)
        return None
    cause = incident_state.row(conn, incident.cause_id)
    since = round(now - cause.resolved_at) if cause is not None and cause.resolved_at is not None else None
    incident_state.update(conn, incident.id, cause_id=None, held_until=None)
    Timeline(conn.engine).record(conn, incident.id, now, "stands_alone", cause=incident.cause_id,
                                 cause_resolved_s=since)
    after = f" {format_duration(float(since))}" if since is not None else ""
    return f"still firing{after} after its cause, incident #{incident.cause_id}, resolved"


def joined_symptoms(conn: sa.Connection, cause_id: int) -> tuple[tuple[int, dict], ...]:
    """The incidents that joined `cause_id` as symptoms and still fire: (id, common labels), oldest first."""
    rows = _JOINED.rows(conn, {"cause_id": cause_id})
    return tuple((symptom_id, json.loads(labels)) for symptom_id, labels in rows)


def cause_firing(conn: sa.Connection, incident) -> bool:
    """Whether the incident joined a cause whose incident is still firing."""
    if incident.cause_id is None:
        return False
    cause = incident_state.row(conn, incident.cause_id)
    return cause is not None and cause.status == "firing"
