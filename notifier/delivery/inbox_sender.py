"""The local inbox channel: the inbox is this notifier's own database, so the page is written there
directly (`Inbox.record_arrivals`: the row `POST /api/v1/inbox` would record), without a trip through
apprise and a second HTTP request into the same process, in the transaction that records the send
attempt (`SendResult.write`): it arrives once, exactly when it is recorded sent.

`POST /api/v1/inbox` stays for pages posted from outside (apprise's JSON service, say), the delivery id
in the `X-Vigil-Page` header so the inbox can join what arrived with the incident it belongs to.
"""

from __future__ import annotations

from vigil.notifier.clock import Clock
from vigil.notifier.deliveries import Delivery
from vigil.notifier.delivery.base import OwnWrite, SendResult
from vigil.notifier.store.inbox import Inbox

INBOX_PATH = "/api/v1/inbox"
PAGE_HEADER = "X-Vigil-Page"


class LocalInboxSender:
    """The page lands in this notifier's own inbox, in the database, at once."""

    def __init__(self, inbox: Inbox, clock: Clock):
        self._inbox = inbox
        self._clock = clock

    def send(self, delivery: Delivery) -> SendResult:
        return SendResult(True, write=OwnWrite(self._inbox.record_arrivals, (delivery, self._clock())))
