"""Record stage: write what the other stages decided into the outbox, and count it in the metrics.

sent / retry / failed: one attempt row and the delivery's new state (`retry` stays pending, due at its
backoff), each attempt also on the incident's timeline (`page_attempt`); postponed: due later, nothing
counted; muted / superseded / digested: closed without an attempt (a page held by a maintenance window
as `page_held` on the timeline). A page the fallback stage handed on is enqueued for the next contact
after its failed attempt is recorded. A send that hands back its own write (the local inbox) has it done
in the same transaction as its attempt.

The worker records the pages of one pass together, and claims the next ones in the same transaction
(`record_then`): one write lock a pass.
"""

from __future__ import annotations

import logging
from typing import Callable, Sequence, TypeVar

import sqlalchemy as sa

from vigil.notifier.delivery.stage import ATTEMPTED, Page
from vigil.notifier.metrics import NotifierMetrics
from vigil.notifier.store.outbox import Attempt, Outbox

log = logging.getLogger(__name__)
T = TypeVar("T")


class RecordStage:
    name = "record"

    def __init__(self, outbox: Outbox, metrics: NotifierMetrics):
        self._outbox = outbox
        self._metrics = metrics

    def __call__(self, page: Page) -> Page:
        return self.record_all([page])[0]

    def record_all(self, pages: Sequence[Page]) -> list[Page]:
        """Record `pages` in ONE transaction (one commit, one write lock, for all); if that fails, each page
        in a transaction of its own, so one bad row does not hold back the rest. Returns those recorded."""
        return self.record_then(pages, None)[0]

    def record_then(self, pages: Sequence[Page],
                    then: Callable[[sa.Connection], T] | None) -> tuple[list[Page], T | None]:
        """`record_all`, and `then(conn)` in the same transaction after the writes (the worker's next
        claim: one write lock a pass); its result, or None when the transaction failed."""
        for page in pages:
            if page.outcome is None:
                raise ValueError(f"delivery {page.delivery.id} left the stages undecided")
        recorded, result = list(pages), None
        try:
            with self._outbox.writing() as conn:
                self._write(pages, conn)
                if then is not None:
                    result = then(conn)
        except Exception:
            if len(pages) <= 1 and then is None:
                raise
            log.exception("recording %d deliveries at once failed; recording them one by one", len(pages))
            recorded = []
            for page in pages:
                try:
                    with self._outbox.writing() as conn:
                        self._write([page], conn)
                    recorded.append(page)
                except Exception:  # left leased: claimed and tried again when the lease ends
                    log.exception("recording delivery %d failed", page.delivery.id)
        for page in recorded:
            self._count(page)
        return recorded, result

    def _write(self, pages: Sequence[Page], conn) -> None:
        own_writes: dict = {}  # write_all -> its items
        attempts = []
        for page in pages:
            outcome, delivery = page.outcome, page.delivery
            if outcome.result == "postponed":
                self._outbox.postpone(delivery.id, outcome.due_at, conn=conn)
            elif outcome.result not in ATTEMPTED:
                self._outbox.close_unsent(delivery.id, outcome.result, outcome.at, held=outcome.held, conn=conn)
            else:
                if outcome.write is not None:
                    own_writes.setdefault(outcome.write.write_all, []).append(outcome.write.item)
                attempts.append(Attempt(delivery, outcome.at, outcome.result == "sent", outcome.error,
                                        outcome.duration_s, outcome.due_at if outcome.result == "retry" else None))
        for write_all, items in own_writes.items():
            write_all(conn, items)
        self._outbox.record_attempts(conn, attempts)
        for page in pages:
            following = page.outcome.fallback
            if following is not None:  # after its failed attempt
                self._outbox.hand_to_next_contact(page.delivery, following.contact_index, following.contact,
                                                  following.kind, page.outcome.at, conn=conn)

    def _count(self, page: Page) -> None:
        """Metrics and log lines, once the page is committed."""
        outcome, delivery = page.outcome, page.delivery
        if outcome.result == "postponed":
            return
        self._metrics.deliveries.labels(delivery.channel_type, outcome.result).inc()
        if outcome.result not in ATTEMPTED:
            log.info("delivery %d to %s/%s not sent: %s", delivery.id, delivery.target, delivery.channel_type,
                     outcome.result)
        elif outcome.result == "sent":
            self._metrics.latency.labels(delivery.channel_type).observe(max(0.0, outcome.at - delivery.created_at))
        else:
            log.warning("delivery %d to %s/%s failed (attempt %d, %s): %s", delivery.id, delivery.target,
                        delivery.channel_type, delivery.attempts + 1, outcome.result, outcome.error)
