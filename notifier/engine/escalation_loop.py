"""The escalation loop: due escalations claimed in batches and stepped (`escalation.run_step`), the
SLA check (`sla.py`) and the resolutions that waited out `incidents.resolve_after` (`settle.py`),
driven by the clock.

Each due escalation (`store/escalations.py`) is handled within one transaction (its batch's, in a
SAVEPOINT of its own): the row is claimed (PostgreSQL: FOR UPDATE SKIP LOCKED; SQLite: the write lock)
and stepped. A crash rolls the uncommitted steps back and their rows are still due after a restart:
nothing is lost and nothing is paged twice (each page has a key). One transaction per batch and a
SAVEPOINT per step: one BEGIN and one durable COMMIT for many steps (the webhook's group commits share
the write lock). `run_once()` does one pass (the SLA check at most once per poll interval, then every
due escalation); `start()` runs passes in a thread, waking at the next due time, every
`poll_interval_s` at most, or when `wake()` is called.
"""

from __future__ import annotations

import logging
import time
from typing import Callable

import sqlalchemy as sa

from vigil.notifier.core.after_commit import AfterCommit
from vigil.notifier.core.clock import Clock
from vigil.notifier.engine import settle, sla
from vigil.notifier.engine.escalation import run_step
from vigil.notifier.engine.paging import LinkMaker
from vigil.notifier.loop_thread import LoopThread
from vigil.notifier.metrics import NotifierMetrics
from vigil.notifier.store import Store
from vigil.oncall.model import OncallConfig

log = logging.getLogger(__name__)
BATCH = 100  # escalations claimed per transaction at most
TRANSACTION_BUDGET_S = 0.05  # a batch commits once its steps took this long (the webhook waits for the lock)


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
                next_due = min((t for t in (self._store.escalations.next_due(), settle.next_due(self._store))
                                if t is not None), default=None)
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
        added, failed = settle.settle(self._store, now), 0
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
