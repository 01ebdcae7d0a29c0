"""Record stage: write what the other stages decided into the outbox, and count it in the metrics.

sent / retry / failed: one attempt row and the delivery's new state (`retry` stays pending, due at its
backoff); postponed: due later, nothing counted; muted / superseded: closed without an attempt.
"""

from __future__ import annotations

import logging

from vigil.notifier.delivery.stage import ATTEMPTED, Page
from vigil.notifier.metrics import NotifierMetrics
from vigil.notifier.store.outbox import Outbox

log = logging.getLogger(__name__)


class RecordStage:
    name = "record"

    def __init__(self, outbox: Outbox, metrics: NotifierMetrics):
        self._outbox = outbox
        self._metrics = metrics

    def __call__(self, page: Page) -> Page:
        outcome, delivery = page.outcome, page.delivery
        if outcome is None:
            raise ValueError(f"delivery {delivery.id} left the stages undecided")
        if outcome.result == "postponed":
            self._outbox.postpone(delivery.id, outcome.due_at)
            return page
        self._metrics.deliveries.labels(delivery.channel_type, outcome.result).inc()
        if outcome.result not in ATTEMPTED:
            self._outbox.close_unsent(delivery.id, outcome.result, outcome.at)
            log.info("delivery %d to %s/%s not sent: %s", delivery.id, delivery.target, delivery.channel_type,
                     outcome.result)
            return page
        ok = outcome.result == "sent"
        self._outbox.record_attempt(delivery.id, outcome.at, ok, outcome.error, outcome.duration_s,
                                    outcome.due_at if outcome.result == "retry" else None)
        if ok:
            self._metrics.latency.labels(delivery.channel_type).observe(max(0.0, outcome.at - delivery.created_at))
        else:
            log.warning("delivery %d to %s/%s failed (attempt %d, %s): %s", delivery.id, delivery.target,
                        delivery.channel_type, delivery.attempts + 1, outcome.result, outcome.error)
        return page
