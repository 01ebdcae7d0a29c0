"""The escalation loop: page the tiers of due escalations and move them on, driven by the clock.

Each due escalation (`store/escalations.py`) is handled within one transaction (its batch's, in a
SAVEPOINT of its own): claim the row (PostgreSQL: FOR UPDATE SKIP LOCKED; SQLite: the write lock),
page its tier's people now (`tier_people`, then each person's contact plan), record it on the
timeline, and set the next position (`steps.py`) due after the tier's `escalate_after`. A crash rolls
the uncommitted steps back and their rows are still due after a restart: nothing is lost and nothing
is paged twice (each page has a key). A tier with nobody on call is `tier_empty` and the next tier is
paged at once; after the last tier of the last round the policy is `policy_exhausted`. A `repage`
escalation (set by an acknowledgement) expires the acknowledgement `repage_acknowledged_after` after
it was given and restarts the policy at the first tier. While a maintenance window holds the
incident's pages, the escalation pauses at the step it reached and resumes when the window is over
(`pause.py`).

Due steps are claimed and run in batches, one transaction per batch and a SAVEPOINT per step (one
BEGIN and one durable COMMIT for many steps: the webhook's group commits share the write lock).
`run_once()` does one pass (the SLA check at most once per poll interval, then every due
escalation); `start()` runs passes in a thread, waking at the next due time, every
`poll_interval_s` at most, or when `wake()` is called.
"""

from __future__ import annotations

import logging
import time
from dataclasses import replace
from functools import partial
from typing import Callable

import sqlalchemy as sa

from vigil.notifier.after_commit import AfterCommit
from vigil.notifier.clock import Clock
from vigil.notifier.engine import pause, sla
from vigil.notifier.engine.paging import LinkMaker, page_people
from vigil.notifier.engine.steps import after_page, normalized
from vigil.notifier.loop_thread import LoopThread
from vigil.notifier.metrics import NotifierMetrics
from vigil.notifier.store import Store, incident_state
from vigil.notifier.store.escalations import ESCALATE, REPAGE, Escalation, Escalations
from vigil.notifier.store.timeline import Timeline
from vigil.oncall.model import OncallConfig
from vigil.oncall.plan import PolicySpec, UnknownPolicy, policy_spec, tier_people

log = logging.getLogger(__name__)
BATCH = 100  # escalations claimed per transaction at most
TRANSACTION_BUDGET_S = 0.05  # a batch commits once its steps took this long (the webhook waits for the lock)
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
    held = pause.holding(conn, oncall, incident, now)
    if pause.before_step(conn, oncall, spec, incident, escalation, held, now):
        return 0
    if escalation.mode == REPAGE and incident.acknowledged_at is not None:
        escalation = _expire_acknowledgement(conn, spec, incident, escalation, now)
        if escalation is None:
            return 0
    position = normalized(spec, escalation.tier, escalation.repeat, escalation.round)
    for _ in spec.tiers:
        if position is None:
            break
        tier, repeat, round = position
        people = tier_people(oncall, spec.name, tier, now)
        step = replace(escalation, tier=tier, repeat=repeat, round=round, mode=ESCALATE)
        if not people:
            timeline.record(conn, incident.id, now, "tier_empty", tier=tier, tier_name=spec.tiers[tier].name,
                            round=round)
            position = normalized(spec, tier + 1, 0, round)
            continue
        added = page_people(conn, oncall, incident, step, people, now, links)
        timeline.record(conn, incident.id, now, "tier_paged", tier=tier, tier_name=spec.tiers[tier].name,
                        people=people, repeat=repeat, round=round, pages=added)
        if metrics is not None:
            counted.add(partial(_count_page, metrics, tier, max(0.0, now - escalation.due_at)))
        if pause.pause_after_paging(conn, oncall, incident, step, held, now):
            return added  # a maintenance window holds the incident: the escalation waits at this step
        following = after_page(spec, tier, repeat, round)
        if following is None:
            _exhausted(conn, incident.id, now)
        else:
            escalations.put(conn, incident.id, spec.name, now + spec.tiers[tier].escalate_after_s,
                            tier=following[0], repeat=following[1], round=following[2])
        return added
    if position is None:
        _exhausted(conn, incident.id, now)
    else:  # every tier was empty: try again later rather than spin
        escalations.put(conn, incident.id, spec.name, now + EMPTY_POLICY_RETRY_S, tier=position[0],
                        repeat=position[1], round=position[2])
    return 0


def _count_page(metrics: NotifierMetrics, tier: int, delay_s: float) -> None:
    metrics.escalations.labels(str(tier)).inc()
    metrics.escalation_delay.observe(delay_s)


def _expire_acknowledgement(conn: sa.Connection, spec: PolicySpec, incident, escalation: Escalation,
                            now: float) -> Escalation | None:
    """A due `repage`: the policy from its first tier if the acknowledgement has expired, else None
    (the row is set to the expiry, or removed when the policy never re-pages)."""
    escalations = Escalations(conn.engine)
    after = spec.repage_acknowledged_after_s
    if after is None:
        escalations.delete(conn, incident.id)
        return None
    expires = incident.acknowledged_at + after
    if expires > now:
        escalations.put(conn, incident.id, spec.name, expires, mode=REPAGE)
        return None
    incident_state.clear_acknowledgement(conn, incident.id)
    Timeline(conn.engine).record(conn, incident.id, now, "ack_expired", acknowledged_by=incident.acknowledged_by,
                                 acknowledged_for_s=now - incident.acknowledged_at)
    return Escalation(incident.id, spec.name, 0, 0, 0, ESCALATE, escalation.due_at)


def _exhausted(conn: sa.Connection, incident_id: int, now: float) -> None:
    Escalations(conn.engine).delete(conn, incident_id)
    Timeline(conn.engine).record(conn, incident_id, now, "policy_exhausted")


class EscalationEngine:
    """Runs due escalations and the SLA check, in a thread or pass by pass (`run_once`)."""

    def __init__(self, store: Store, oncall: OncallConfig, clock: Clock, metrics: NotifierMetrics | None = None,
                 poll_interval_s: float = 0.5, links: LinkMaker | None = None,
                 on_enqueued: Callable[[], None] | None = None):
        self._store, self._oncall, self._clock, self._metrics = store, oncall, clock, metrics
        self._poll_interval_s, self._links, self._on_enqueued = poll_interval_s, links, on_enqueued
        self._loop_thread = LoopThread("vigil-notifier-escalation", self._loop)
        # The SLA check reads every firing incident: once per poll interval (the idle loop's pace), not on
        # each of the many passes a stream of due steps makes.
        self._sla_checked_at: float | None = None
        store.escalations.on_change(self.wake)

    def start(self) -> None:
        self._loop_thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        self._loop_thread.stop(timeout)

    def wake(self) -> None:
        """An escalation may be due earlier than the loop thinks: look now."""
        self._loop_thread.wake()

    def _loop(self) -> None:
        while not self._loop_thread.stopping:
            wait = self._poll_interval_s
            try:
                self.run_once()
                next_due = self._store.escalations.next_due()
                if next_due is not None:
                    wait = min(wait, max(0.0, next_due - self._clock()))
            except Exception:  # the database may be briefly locked or down: keep the engine alive
                log.exception("escalation pass failed; retrying")
            self._loop_thread.idle(wait)

    def run_once(self) -> int:
        """One pass: SLA breaches (at most once per `poll_interval_s` of the clock), then every due
        escalation; returns how many pages were enqueued.

        Due steps run in batches, one transaction each (up to `BATCH` rows claimed, as many run as fit in
        `TRANSACTION_BUDGET_S`; the rest stay due for the next batch), each step in its own SAVEPOINT: a
        step that fails is rolled back alone, stays due, and the pass raises once its batch is committed.
        """
        now = self._clock()
        if self._sla_checked_at is None or not 0 <= now - self._sla_checked_at < self._poll_interval_s:
            sla.check(self._store, self._oncall, now, self._metrics)
            self._sla_checked_at = now
        added, failed = 0, 0
        while self._due(now):
            counted = AfterCommit()
            with self._store.engine.begin() as conn:
                claimed = self._store.escalations.claim_due(conn, now, BATCH)
                started, ran = time.monotonic(), 0
                for escalation in claimed:
                    ran += 1
                    step = AfterCommit()  # a step rolled back to its SAVEPOINT is not counted
                    try:
                        with conn.begin_nested():
                            added += run_step(conn, self._oncall, escalation, now, step, self._links, self._metrics)
                        counted.extend(step)
                    except (sa.exc.OperationalError, sa.exc.InterfaceError):
                        raise  # the database itself failed: the whole batch rolls back and stays due
                    except Exception:
                        failed += 1
                        log.exception("incident %d: escalation step failed; it stays due", escalation.incident_id)
                    if time.monotonic() - started > TRANSACTION_BUDGET_S:
                        break
            counted.run()
            if failed or (ran == len(claimed) and len(claimed) < BATCH):
                break
        if added and self._on_enqueued is not None:
            self._on_enqueued()
        if failed:
            raise RuntimeError(f"{failed} escalation step(s) failed and stay due")
        return added

    def _due(self, now: float) -> bool:
        """Whether any escalation is due by `now` (a read: no write lock taken for nothing)."""
        next_due = self._store.escalations.next_due()
        return next_due is not None and next_due <= now
