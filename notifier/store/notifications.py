"""Notifications and incidents: all SQL on `notifications`, `incidents` and `incident_alerts`
(the engine's incident columns: `incident_state.py`).

`store_in` is the store's part of the webhook's one transaction: store the notification once (dedup)
and apply its incident decision (`core/incidents.py`). The group commit (`ingest/group_commit.py`)
then hands the event to the on-call engine on the same connection, all or nothing.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field

import sqlalchemy as sa

from vigil.notifier.core.after_commit import AfterCommit
from vigil.notifier.core.incidents import IncidentDecision, IncidentState, decide
from vigil.notifier.core.models import WebhookPayload
from vigil.notifier.schema import incident_alerts, incidents, notifications
from vigil.notifier.store import incident_state
from vigil.notifier.store.engine import reading
from vigil.notifier.store.outbox import Outbox
from vigil.notifier.store.prepared import Prepared
from vigil.common.times import rfc3339

RECONCILED_PREFIX = "reconciled:"

# the ingest's statements, made once (`prepared.py`: compiled once per dialect, run on the DBAPI cursor)
_SEEN = Prepared(sa.select(notifications.c.id, notifications.c.incident_id)
                 .where(notifications.c.dedup_key == sa.bindparam("dedup_key")))
_INCIDENT_STATE = (incidents.c.id, incidents.c.status, incidents.c.resolved_at, incidents.c.resolving_at)
_LATEST = Prepared(sa.select(*_INCIDENT_STATE).where(incidents.c.group_key == sa.bindparam("group_key"))
                   .order_by(incidents.c.id.desc()).limit(1))
_INCIDENT = Prepared(sa.select(*_INCIDENT_STATE).where(incidents.c.id == sa.bindparam("id")))
_ALERT_KEYS = Prepared(sa.select(incident_alerts.c.alert_key)
                       .where(incident_alerts.c.incident_id == sa.bindparam("incident_id")))
# is any incident opened by reconciliation still firing? Keyed by "is SQLite": there the prefix is a range
# on the firing incidents' unique index (exact: SQLite compares TEXT bytewise); PostgreSQL's collation
# may not order it so, and LIKE stays exact. 'firing' is written into the SQL, not bound: SQLite plans a
# query on a partial index (WHERE status = 'firing') anew on every run when the status is a parameter,
# which made this the webhook's costliest statement
_FIRING = sa.literal_column("'firing'")
_ANY_RECONCILED = {
    sqlite: Prepared(sa.select(incidents.c.id).where(
        incidents.c.status == _FIRING,
        sa.and_(incidents.c.group_key >= RECONCILED_PREFIX,
                incidents.c.group_key < RECONCILED_PREFIX[:-1] + chr(ord(RECONCILED_PREFIX[-1]) + 1))
        if sqlite else incidents.c.group_key.startswith(RECONCILED_PREFIX)).limit(1))
    for sqlite in (True, False)
}
_NEW_INCIDENT = Prepared(incidents.insert().returning(incidents.c.id),
                         ["group_key", "status", "opened_at", "resolved_at", "resolved_by", "labels", "title"])
_NEW_ALERT_KEYS = Prepared(incident_alerts.insert(), ["incident_id", "alert_key"])
_LATEST_PAYLOAD = Prepared(sa.select(notifications.c.payload)
                           .where(notifications.c.incident_id == sa.bindparam("incident_id"))
                           .order_by(notifications.c.id.desc()).limit(1))
_NEW_NOTIFICATION = Prepared(notifications.insert().returning(notifications.c.id),
                             ["dedup_key", "received_at", "group_key", "status", "receiver", "incident_id", "payload"])


# the firing incidents, read through their partial index (`one_firing_incident_per_group`); `open_faults`
# leaves the joined ones out and keeps the newest itself: with `cause_id IS NULL`, ORDER BY or LIMIT in
# the query SQLite walks nearly every incident (as engine/causes.py's candidates_query says)
FIRING_INCIDENTS = sa.select(incidents.c.id, incidents.c.labels, incidents.c.priority, incidents.c.acknowledged_at,
                             incidents.c.cause_id).where(incidents.c.status == "firing")


@dataclass(frozen=True)
class IngestResult:
    notification_id: int
    incident_id: int
    duplicate: bool
    deliveries: int = 0
    # what the ingest counted (tiers paged), to run once its transaction committed: `committed()`
    counted: AfterCommit = field(default_factory=AfterCommit, compare=False, repr=False)

    def committed(self) -> "IngestResult":
        """Run the ingest's counts: the caller's transaction has committed (once; later calls do nothing)."""
        self.counted.run()
        return self


@dataclass(frozen=True)
class IngestEvent:
    """A stored (not duplicate) notification and what it did to its incident, on the ingest's `conn`."""

    conn: sa.Connection
    payload: WebhookPayload
    decision: IncidentDecision
    incident_id: int
    notification_id: int
    now: float
    title: str  # `payload.title()`, made once
    counted: AfterCommit = field(default_factory=AfterCommit)  # counts to run once the ingest committed


class Notifications:
    def __init__(self, engine: sa.Engine, outbox: Outbox):
        self.engine = engine
        self._outbox = outbox
        self.ingest_lock = threading.Lock()  # one ingest alone at a time per process; the DB guards the rest

    def store_in(self, conn: sa.Connection, payload: WebhookPayload, now: float,
                 reopen_within_s: float, resolve_after_s: float = 0.0) -> "IngestEvent | IngestResult":
        """Store `payload` once and apply its incident decision, on the caller's transaction `conn`
        (several ingests may share one): the event to hand to the on-call engine, or the stored
        notification's ids when it is a duplicate. With `resolve_after_s` a resolution only sets when the
        incident will resolve (`resolving_at`); the engine's pass resolves it then (`settle.py`). An IntegrityError (an HA peer got there first) must
        roll that transaction back and run it again."""
        key = payload.dedup_key()
        seen = _SEEN.first(conn, {"dedup_key": key})
        if seen is not None:
            return IngestResult(seen[0], seen[1], duplicate=True)
        latest = self._latest_incident(conn, payload)
        decision = decide(payload, latest, now, reopen_within_s)
        title = payload.title()
        if decision.creates_incident:
            resolved = decision.page_status == "resolved"
            incident_id = _NEW_INCIDENT.first(conn, dict(
                group_key=payload.groupKey, status=decision.page_status, opened_at=_opened_at(payload, now),
                resolved_at=now if resolved else None, resolved_by="alertmanager" if resolved else None,
                labels=_LABELS.encode(payload.commonLabels), title=title))[0]
        else:
            incident_id = latest.id
            if decision.action == "resolve" and resolve_after_s > 0:
                if not latest.resolving:  # an HA peer's copy does not push the wait back
                    incident_state.update(conn, incident_id, resolving_at=now + resolve_after_s)
            elif decision.action == "resolve":
                incident_state.resolve(conn, incident_id, "alertmanager", now)
            elif decision.action == "steady":
                incident_state.update(conn, incident_id, resolving_at=None)
            elif decision.action == "reopen":
                incident_state.reopen(conn, incident_id)
        known = frozenset() if decision.creates_incident else latest.known_alert_keys
        _NEW_ALERT_KEYS.many(conn, [{"incident_id": incident_id, "alert_key": k} for k in decision.alert_keys - known])
        notification_id = _NEW_NOTIFICATION.first(conn, dict(
            dedup_key=key, received_at=now, group_key=payload.groupKey, status=payload.status,
            receiver=payload.receiver, incident_id=incident_id, payload=payload.model_dump_json()))[0]
        return IngestEvent(conn, payload, decision, incident_id, notification_id, now, title)

    def _latest_incident(self, conn, payload: WebhookPayload) -> IncidentState | None:
        row = _LATEST.first(conn, {"group_key": payload.groupKey})
        if row is None and payload.groupKey.startswith(RECONCILED_PREFIX):
            # reconciliation's own notification: Alertmanager's retry may have opened the group's incident
            # since reconciliation read the store; checked here, inside the write transaction, it joins that
            joined = self._firing_sharing(conn, payload, reconciled_only=False)
            row = None if joined is None else _INCIDENT.first(conn, {"id": joined})
        elif (row is None or row[1] == "resolved") and _reconciled_firing(conn):
            # an incident opened by reconciliation (no groupKey known then) is adopted by the first
            # notification that shares one of its alerts (the join only runs while such an incident is firing)
            adopted = self._firing_sharing(conn, payload, reconciled_only=True)
            if adopted is not None:
                incident_state.update(conn, adopted, group_key=payload.groupKey)
                row = _INCIDENT.first(conn, {"id": adopted})
        if row is None:
            return None
        keys = _ALERT_KEYS.rows(conn, {"incident_id": row[0]})
        return IncidentState(row[0], row[1], frozenset(k for (k,) in keys), row[2], resolving=row[3] is not None)

    def _firing_sharing(self, conn, payload: WebhookPayload, reconciled_only: bool) -> int | None:
        """The oldest firing incident holding one of `payload`'s alerts (only reconciliation's, if asked)."""
        keys = [alert.firing_key() for alert in payload.alerts]
        query = (sa.select(incidents.c.id).join(incident_alerts, incident_alerts.c.incident_id == incidents.c.id)
                 .where(incidents.c.status == "firing", incident_alerts.c.alert_key.in_(keys)))
        if reconciled_only:
            query = query.where(incidents.c.group_key.startswith(RECONCILED_PREFIX))
        return conn.execute(query.order_by(incidents.c.id).limit(1)).scalar()

    def incident_labels(self, conn: sa.Connection, incident_id: int) -> dict:
        """The common labels of incident `incident_id`, read on `conn`."""
        return json.loads(conn.execute(sa.select(incidents.c.labels)
                                       .where(incidents.c.id == incident_id)).scalar_one())

    def incident_resolved(self, incident_id: int) -> bool:
        with reading(self.engine) as conn:
            return conn.execute(sa.select(incidents.c.status)
                                .where(incidents.c.id == incident_id)).scalar() == "resolved"

    def known_alert_keys(self) -> set[str]:
        """Every alert firing (fingerprint@start) some incident has seen."""
        with reading(self.engine) as conn:
            return set(conn.execute(sa.select(incident_alerts.c.alert_key)).scalars())

    def firing_count(self) -> int:
        with reading(self.engine) as conn:
            return conn.execute(sa.select(sa.func.count()).select_from(incidents)
                                .where(incidents.c.status == "firing")).scalar_one()

    def open_faults(self, limit: int = 200) -> list[tuple[int, dict, str | None, bool]]:
        """The incidents firing now that joined no other (one per fault), newest first: (id, labels,
        priority, acknowledged)."""
        with reading(self.engine) as conn:
            rows = conn.execute(FIRING_INCIDENTS).all()
        faults = sorted((row for row in rows if row.cause_id is None), key=lambda row: row.id, reverse=True)[:limit]
        return [(row.id, json.loads(row.labels), row.priority, row.acknowledged_at is not None) for row in faults]

    def incident(self, incident_id: int) -> dict | None:
        """The incident as people see it (state, priority, SLA, tier …; `incident_state.as_dict`), or None."""
        with reading(self.engine) as conn:
            found = incident_state.row(conn, incident_id)
            if found is None:
                return None
            return incident_state.as_dict(found, incident_state.last_paged_tiers(conn, [incident_id]).get(incident_id))

    def list_incidents(self, limit: int, state: str | None = None, priority: str | None = None,
                       team: str | None = None) -> list[dict]:
        """The newest `limit` incidents matching the filters, oldest first."""
        query = sa.select(incidents)
        if state is not None:
            query = query.where(incident_state.state_filter(state))
        if priority is not None:
            query = query.where(incidents.c.priority == priority)
        if team is not None:
            query = query.where(incidents.c.team == team)
        with reading(self.engine) as conn:
            rows = conn.execute(query.order_by(incidents.c.id.desc()).limit(limit)).all()
            tiers = incident_state.last_paged_tiers(conn, [r.id for r in rows])
        return [incident_state.as_dict(r, tiers.get(r.id)) for r in reversed(rows)]

    def list_notifications(self, limit: int) -> list[dict]:
        with reading(self.engine) as conn:
            rows = conn.execute(sa.select(notifications).order_by(notifications.c.id.desc()).limit(limit)).all()
        out = []
        for r in reversed(rows):
            alerts = [dict(labels=a["labels"], status=a["status"], startsAt=a["startsAt"], endsAt=a["endsAt"],
                           fingerprint=a["fingerprint"]) for a in json.loads(r.payload)["alerts"]]
            out.append(dict(id=r.id, received_at=rfc3339(r.received_at), group_key=r.group_key, status=r.status,
                            incident_id=r.incident_id, alerts=alerts))
        return out


def latest_payload(conn: sa.Connection, incident_id: int) -> WebhookPayload | None:
    """The newest notification of the incident (what its pages say), read on `conn`."""
    found = _LATEST_PAYLOAD.first(conn, {"incident_id": incident_id})  # each page reads it: made once
    return None if found is None else WebhookPayload.model_validate_json(found[0])


def _reconciled_firing(conn: sa.Connection) -> bool:
    """Whether an incident opened by reconciliation is firing; asked once a transaction (a group commit's
    members share one), since no ingest opens such an incident."""
    transaction, cached = conn.get_transaction(), conn.info.get(_RECONCILED_FIRING)
    if cached is not None and cached[0] is transaction:
        return cached[1]
    found = _ANY_RECONCILED[conn.dialect.name == "sqlite"].first(conn) is not None
    conn.info[_RECONCILED_FIRING] = (transaction, found)
    return found


_RECONCILED_FIRING = "vigil_reconciled_firing"
_LABELS = json.JSONEncoder(sort_keys=True)  # what `json.dumps(labels, sort_keys=True)` writes, one encoder for all


def labels_hold(key: str, value: str):
    """A WHERE clause on `incidents`: its stored labels hold `key: value`, as `_LABELS` writes them (a
    pre-filter: callers check the labels they read back)."""
    return incidents.c.labels.contains(_LABELS.encode({key: value})[1:-1], autoescape=True)


def _opened_at(payload: WebhookPayload, now: float) -> float:
    """When the incident started: the earliest alert start, never later than now."""
    starts = [alert.starts_at.timestamp() for alert in payload.alerts]
    return min(starts + [now])
