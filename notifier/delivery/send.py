"""Send stage: hand the page to its channel's sender (apprise, or the local inbox) and note the result.

A sender that raises is a failed send (a plugin bug must not kill the worker). A page whose channel
is no longer in the on-call config fails for good: a retry cannot bring the channel back.
"""

from __future__ import annotations

from typing import Callable

from vigil.notifier.clock import Clock
from vigil.notifier.deliveries import Delivery
from vigil.notifier.delivery.base import Sender
from vigil.notifier.delivery.stage import Outcome, Page

CHANNEL_GONE = "channel no longer in the on-call config"


class SendStage:
    name = "send"

    def __init__(self, sender_for: Callable[[Delivery], Sender | None], clock: Clock):
        self._sender_for = sender_for
        self._clock = clock

    def __call__(self, page: Page) -> Page:
        if page.outcome is not None:
            return page
        sender = self._sender_for(page.delivery)
        started = self._clock()
        if sender is None:
            return page.decided(Outcome("failed", started, error=CHANNEL_GONE, retryable=False))
        try:
            result = sender.send(page.delivery)
            ok, error, write = result.ok, result.error, result.write
        except Exception as exc:
            ok, error, write = False, f"{type(exc).__name__}: {exc}", None
        done = self._clock()
        return page.decided(Outcome("sent" if ok else "failed", done, error=None if ok else error,
                                    duration_s=max(0.0, done - started), write=write if ok else None))
