"""Dedup stage: of the firing pages of one incident waiting for one channel, only the newest is sent.

Alertmanager sends a group's whole state every time, so a later page of an incident lists every alert
an earlier one did. When pages pile up for a channel (throttled, or retrying while it is down), the
older ones end `superseded` without a send, and the newest carries the news: one SMS instead of three.

The other dedup layers sit before the outbox: a notification delivered again (an HA peer, a retry) is
stored once and never routed (`WebhookPayload.dedup_key`, in the store's ingest), and a notification
enqueues at most one page per (target, channel) (a unique key of the outbox).
"""

from __future__ import annotations

from typing import Callable

from vigil.notifier.deliveries import Delivery
from vigil.notifier.delivery.stage import Outcome, Page


class DedupStage:
    name = "dedup"

    def __init__(self, newer_page_waiting: Callable[[Delivery], bool]):
        self._newer_page_waiting = newer_page_waiting

    def __call__(self, page: Page) -> Page:
        if page.outcome is not None or page.delivery.page_status != "firing" or page.delivery.is_digest:
            return page
        if self._newer_page_waiting(page.delivery):
            return page.decided(Outcome("superseded", page.now))
        return page
