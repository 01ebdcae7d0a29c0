"""Mute stage: a firing page whose incident has resolved while it waited is not sent.

A firing page can wait in the outbox: held back by the throttle, between retries, or (with
escalation tiers) until its step is due. If the incident resolves meanwhile, paging "FIRING" now
would be stale; the incident's resolved page tells the on-call what happened. Such a delivery ends
`muted` (not `failed`: nothing went wrong) without a send attempt. Resolved pages are never muted.
"""

from __future__ import annotations

from typing import Callable

from vigil.notifier.delivery.stage import Outcome, Page


class MuteStage:
    name = "mute"

    def __init__(self, incident_resolved: Callable[[int], bool]):
        self._incident_resolved = incident_resolved

    def __call__(self, page: Page) -> Page:
        if page.outcome is not None or page.delivery.page_status != "firing":
            return page
        if self._incident_resolved(page.delivery.incident_id):
            return page.decided(Outcome("muted", page.now))
        return page
