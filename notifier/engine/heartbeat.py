"""The heartbeat monitor: a heartbeat not heard for its timeout opens an incident through the normal
intake (so the on-call engine routes it, pages its first tier and escalates it like any alert), and the
next beat resolves it.

Alertmanager's always-firing Watchdog reaches `POST /api/v1/heartbeat/watchdog` every `repeat_interval`;
when Prometheus stops evaluating rules, Alertmanager stops, or the path between them and the notifier
breaks, the beats stop and this monitor pages. An external dead-man's switch (a cron job, another
site's Alertmanager) can post to its own heartbeat the same way.

The incident is a synthetic Alertmanager notification (`missing_payload`): group `heartbeat:NAME`, one
alert `HeartbeatMissing` starting at the deadline that passed. Built from the deadline alone, two
notifiers that both saw it make the same notification (the same dedup key), and the row lock
(`store/heartbeats.py`, as the escalation engine claims its rows) lets only one of them ingest it: one
incident, paged once. `run_once()` does one pass on the clock; `start()` runs passes in a thread,
waking at the next deadline or every `poll_interval_s`.
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass
from typing import Callable

import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError

from vigil.common.durations import format_duration
from vigil.common.times import rfc3339, ZERO_TIME
from vigil.notifier.core.after_commit import AfterCommit
from vigil.notifier.core.clock import Clock
from vigil.notifier.ingest.group_commit import IncidentPlanner, ingest_in
from vigil.notifier.heartbeat_spec import HeartbeatSpec
from vigil.notifier.loop_thread import LoopThread
from vigil.notifier.core.models import WebhookPayload
from vigil.notifier.store import Store
from vigil.notifier.store.heartbeats import HeartbeatRow

log = logging.getLogger(__name__)
RECEIVER = "vigil-heartbeat"
GROUP_PREFIX = "heartbeat:"
RUNBOOK = "docs/runbooks.md#heartbeatmissing"


def missing_payload(spec: HeartbeatSpec, since: float, resolved_at: float | None = None) -> WebhookPayload:
    """The notification of heartbeat `spec` missing since `since` (its deadline), resolved at
    `resolved_at` if given; the same arguments always make the same notification."""
    labels = spec.alert_labels()
    alert = {"status": "firing" if resolved_at is None else "resolved", "labels": labels,
             "annotations": _annotations(spec), "startsAt": rfc3339(since),
             "endsAt": ZERO_TIME if resolved_at is None else rfc3339(resolved_at),
             "generatorURL": "", "fingerprint": hashlib.sha256(f"{GROUP_PREFIX}{spec.name}".encode()).hexdigest()[:16]}
    return WebhookPayload.model_validate({
        "version": "4", "groupKey": f"{GROUP_PREFIX}{spec.name}", "status": alert["status"], "receiver": RECEIVER,
        "groupLabels": {"heartbeat": spec.name}, "commonLabels": labels, "commonAnnotations": alert["annotations"],
        "alerts": [alert]})


def _annotations(spec: HeartbeatSpec) -> dict[str, str]:
    silent = format_duration(spec.timeout_s)
    return {"summary": f"heartbeat {spec.name} not heard for {silent}",
            "description": (f"The notifier has not heard the heartbeat {spec.name!r} for {silent}. Whatever sends it "
                            "(for the Watchdog: Prometheus rule evaluation, Alertmanager, and the path from them to "
                            "the notifier) may be down, so other alerts may reach nobody. Resolves by itself at the "
                            "next beat."),
            "runbook_url": RUNBOOK}


@dataclass(frozen=True)
class Beat:
    """What a heartbeat did: its row after the beat, and the incident it resolved (if it was missing)."""

    row: HeartbeatRow
    resolved_incident: int | None


class UnknownHeartbeat(KeyError):
    pass


class HeartbeatMonitor:
    """Watches `specs`: opens incidents for missing heartbeats (`run_once`) and resolves them (`heard`)."""

    def __init__(self, store: Store, specs: tuple[HeartbeatSpec, ...], planner: IncidentPlanner, clock: Clock,
                 poll_interval_s: float = 0.5, on_enqueued: Callable[[], None] | None = None):
        self._store, self._planner, self._clock = store, planner, clock
        self.specs = {spec.name: spec for spec in specs}
        self._poll_interval_s, self._on_enqueued = poll_interval_s, on_enqueued
        self._watching = False
        self._loop_thread = LoopThread("vigil-notifier-heartbeat", self._loop)

    def start(self) -> None:
        if self.specs:
            self._loop_thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        self._loop_thread.stop(timeout)

    def _loop(self) -> None:
        while not self._loop_thread.stopping:
            wait = self._poll_interval_s
            try:
                self.run_once()
                wait = min(wait, max(0.0, self.next_deadline() - self._clock()))
            except Exception:  # the database may be briefly locked or down: keep watching
                log.exception("heartbeat pass failed; retrying")
            self._loop_thread.idle(wait)

    def rows(self) -> dict[str, HeartbeatRow]:
        return self._store.heartbeats.all()

    def next_deadline(self) -> float:
        """The earliest deadline of a heartbeat not missing yet (infinity when there is none)."""
        rows = self._store.heartbeats.all()
        return min((rows[name].deadline(spec.timeout_s) for name, spec in self.specs.items()
                    if name in rows and rows[name].missing_since is None), default=float("inf"))

    def run_once(self) -> list[int]:
        """One pass at the clock's time: an incident for each heartbeat past its deadline and not missing
        yet; returns the incidents this notifier opened (a peer's are not counted)."""
        now = self._clock()
        if not self._watching:
            self._write(lambda conn, _counted: self._start_watching(conn, now))
            self._watching = True
        rows = self._store.heartbeats.all()  # a read: the write lock only for a heartbeat that is due
        opened = []
        for name, spec in self.specs.items():
            row = rows.get(name)
            if row is not None and row.missing_since is None and row.deadline(spec.timeout_s) <= now:
                incident = self._write(lambda conn, counted, spec=spec: self._open(conn, spec, now, counted))
                if incident is not None:
                    opened.append(incident)
        if opened:
            self._enqueued()
        return opened

    def _start_watching(self, conn: sa.Connection, now: float) -> None:
        """A row per heartbeat; one whose deadline passed while no notifier ran (not missing yet) gets a
        whole timeout from now: nobody could hear it, so its silence proves nothing yet."""
        heartbeats = self._store.heartbeats
        heartbeats.watch(conn, sorted(self.specs), now)
        for name, spec in sorted(self.specs.items()):
            row = heartbeats.lock(conn, name)
            if row.missing_since is None and row.deadline(spec.timeout_s) <= now:
                heartbeats.rewatch(conn, name, now)

    def _open(self, conn: sa.Connection, spec: HeartbeatSpec, now: float, counted: AfterCommit) -> int | None:
        row = self._store.heartbeats.lock(conn, spec.name, skip_locked=True)
        if row is None or row.missing_since is not None or row.deadline(spec.timeout_s) > now:
            return None  # a peer holds it, handled it, or a beat came in meanwhile
        deadline = row.deadline(spec.timeout_s)
        result = ingest_in(conn, self._store.notifications, missing_payload(spec, deadline), now, self._planner)
        counted.extend(result.counted)
        self._store.heartbeats.set_missing(conn, spec.name, deadline, result.incident_id)
        log.warning("heartbeat %s not heard since %s: incident %d opened", spec.name,
                    rfc3339(row.last_seen_at or row.watching_since), result.incident_id)
        return result.incident_id

    def heard(self, name: str) -> Beat:
        """Heartbeat `name` beat now: record it, and resolve its incident if it was missing."""
        spec = self.specs.get(name)
        if spec is None:
            raise UnknownHeartbeat(name)
        now = self._clock()
        beat = self._write(lambda conn, counted: self._beat(conn, spec, now, counted))
        if beat.resolved_incident is not None:
            self._enqueued()
        return beat

    def _beat(self, conn: sa.Connection, spec: HeartbeatSpec, now: float, counted: AfterCommit) -> Beat:
        heartbeats = self._store.heartbeats
        heartbeats.watch(conn, [spec.name], now)
        before = heartbeats.lock(conn, spec.name)  # waits for a monitor that holds it
        heartbeats.heard(conn, spec.name, now)
        resolved = None
        if before.missing_since is not None:
            payload = missing_payload(spec, before.missing_since, resolved_at=now)
            result = ingest_in(conn, self._store.notifications, payload, now, self._planner)
            counted.extend(result.counted)
            resolved = result.incident_id
            heartbeats.set_alive(conn, spec.name)
            log.info("heartbeat %s heard again: incident %d resolved", spec.name, resolved)
        return Beat(heartbeats.lock(conn, spec.name), resolved)

    def _write(self, work: Callable[[sa.Connection, AfterCommit], object]):
        """`work(conn, counted)` in a transaction of its own, run again if a peer's row got there first;
        what it counted in `counted` is run once the transaction committed (an attempt rolled back is not)."""
        for attempt in range(3):
            counted = AfterCommit()
            try:
                with self._store.engine.begin() as conn:
                    done = work(conn, counted)
                counted.run()
                return done
            except IntegrityError:
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    def _enqueued(self) -> None:
        """Wake the delivery worker and the escalation engine: an incident opened or resolved (an ordinary
        beat changes nothing of theirs, so it wakes neither)."""
        if self._on_enqueued is not None:
            self._on_enqueued()
        self._store.escalations.changed()
