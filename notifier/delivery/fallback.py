"""Fallback stage: a person's contact that keeps failing hands the page to their next contact.

After `after_attempts` failed sends of an escalation page (or one failure that a retry cannot mend: the
contact left the on-call file), the page is given up on that contact (`failed`, no more retries) and
enqueued, due now, for the next contact in the person's fallback order (the order of `contacts` in
the on-call file): "call until reached". The timeline says so (`page_fallback`). A person with no
further contact keeps the ordinary retries. Legacy routes page every channel at once, so their pages
(no tier) never fall back.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Callable, Protocol

from vigil.notifier.deliveries import Delivery
from vigil.notifier.delivery.stage import Page

DEFAULT_AFTER_ATTEMPTS = 3


class NextContact(Protocol):
    contact_index: int
    contact: str
    kind: str


class FallbackStage:
    name = "fallback"

    def __init__(self, after_attempts: int, next_contact: Callable[[Delivery], NextContact | None]):
        """`next_contact(delivery)`: the person's next contact after the delivery's, or None. The record
        stage enqueues the page for it, after the failed attempt."""
        self._after_attempts = after_attempts
        self._next_contact = next_contact

    def __call__(self, page: Page) -> Page:
        outcome, delivery = page.outcome, page.delivery
        if outcome is None or outcome.result not in ("failed", "retry") or delivery.tier is None:
            return page
        if delivery.attempts + 1 < self._after_attempts and outcome.retryable:
            return page
        following = self._next_contact(delivery)
        if following is None:
            return page
        return page.decided(replace(outcome, result="failed", due_at=None, fallback=following))
