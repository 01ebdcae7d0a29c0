"""Channels: how a page reaches a person. `Sender` is the one interface every integration implements
(send one outbox delivery, say how it went); `Channels` finds a delivery's contact in the on-call
config and its sender, throttle and storm limits; `AppriseSender` sends through apprise (one object
per recipient), `LocalInboxSender` writes the notifier's own inbox; a `push` contact's sender is Web
Push's (`webpush.py`), handed in.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Callable, Protocol

import apprise
import sqlalchemy as sa
from apprise.plugins.base import NotifyBase

from vigil.notifier.core.clock import Clock
from vigil.notifier.core.deliveries import Delivery
from vigil.notifier.store.inbox import Inbox
from vigil.oncall.contacts import Contact
from vigil.oncall.model import OncallConfig
from vigil.oncall.plan import contact_at, ContactRef, next_contact


# --- base -----------------------------------------------------------------------------------------
# The one interface every integration implements: send one outbox delivery, say how it went.

@dataclass(frozen=True)
class OwnWrite:
    """The send of a channel whose destination is this notifier's own database (the local inbox), handed
    back instead of done: the record stage does it in the transaction that records the attempt, so the
    page arrives exactly when, and only if, it is recorded as sent. `write_all(conn, items)` writes the
    `item`s of every such page of one pass at once."""

    write_all: Callable[[sa.Connection, list[Any]], None]
    item: Any


@dataclass(frozen=True)
class SendResult:
    ok: bool
    error: str | None = None
    write: OwnWrite | None = None
    retryable: bool = True  # False: no retry can mend it (no browser subscribed): fall back at once


class Sender(Protocol):
    """One recipient channel (an apprise URL, the local inbox…)."""

    def send(self, delivery: Delivery) -> SendResult: ...


# --- channels -------------------------------------------------------------------------------------
# An outbox row's contact, looked up in the on-call config: its sender, throttle and storm limits.
#
# A row names a person (`target`), the position of one of their contacts (`channel_index`) and its kind
# (`channel_type`); `vigil.oncall.plan.contact_at` finds that contact, for people and for first-version
# targets alike. An inbox contact goes to the local inbox, where the page shows under the contact's
# kind (`phone`, `sms` …); any other goes through apprise, one apprise object per recipient.

class Channels:
    def __init__(self, oncall: OncallConfig, inbox: Sender, default_per_minute: int, push: Sender | None = None):
        self._oncall = oncall
        self._inbox = inbox
        self._push = push
        self._default_per_minute = default_per_minute

    def sender_for(self, delivery: Delivery) -> Sender | None:
        """The sender of `delivery`'s contact; None when the on-call config no longer has it."""
        contact = self._contact(delivery)
        if contact is None:
            return None
        if contact.inbox:
            return self._inbox
        if contact.push:
            return self._push
        return AppriseSender(contact.url)  # one apprise object per recipient and page

    def per_minute(self, delivery: Delivery) -> int | None:
        """The throttle limit of `delivery`'s contact; None (unlimited) for the local inbox."""
        contact = self._contact(delivery)
        if contact is None or contact.inbox:
            return None
        return contact.max_per_minute or self._default_per_minute

    def storm_limit(self, delivery: Delivery) -> int | None:
        """Pages a minute to one person's contact before the rest become a digest (None: no limit)."""
        return self._oncall.storm.max_pages_per_minute

    def next_contact(self, delivery: Delivery) -> ContactRef | None:
        """The person's contact after `delivery`'s in their fallback order, if any. A first-version
        target has none: its pages went to every channel at once."""
        if delivery.target in self._oncall.targets:
            return None
        return next_contact(self._oncall, delivery.target, delivery.channel_index)

    def _contact(self, delivery: Delivery) -> Contact | None:
        return contact_at(self._oncall, delivery.target, delivery.channel_index, delivery.channel_type)


# --- apprise_sender -------------------------------------------------------------------------------
# Send through apprise: one `Apprise` object per recipient, so this delivery's own result is known.
#
# (`Apprise.notify()` is True only when *every* URL it holds succeeded; field notes §10.)

_NOTIFY_TYPE = {"firing": apprise.NotifyType.FAILURE, "resolved": apprise.NotifyType.SUCCESS}


class AppriseSender:
    """A recipient reached through any apprise URL (mailto://, tgram://, twilio://, json://…), or through
    a ready apprise service object (how the inbox keeps its token out of URLs that apprise logs)."""

    def __init__(self, service: str | NotifyBase):
        self._service = service

    def send(self, delivery: Delivery) -> SendResult:
        notifier = apprise.Apprise()
        if not notifier.add(self._service):
            return SendResult(False, "apprise rejected the URL")
        # apprise reports *why* a send failed only in its log: capture it for the attempt record
        with apprise.LogCapture(level=logging.WARNING) as log:
            ok = notifier.notify(title=delivery.title, body=delivery.body,
                                 notify_type=_NOTIFY_TYPE.get(delivery.page_status, apprise.NotifyType.INFO))
            reason = log.getvalue().strip()
        if ok:
            return SendResult(True)
        return SendResult(False, reason.splitlines()[-1][:500] if reason else "apprise reported failure")


# --- inbox_sender ---------------------------------------------------------------------------------
# The local inbox channel: the inbox is this notifier's own database, so the page is written there
# directly (`Inbox.record_arrivals`: the row `POST /api/v1/inbox` would record), without a trip through
# apprise and a second HTTP request into the same process, in the transaction that records the send
# attempt (`SendResult.write`): it arrives once, exactly when it is recorded sent.
#
# `POST /api/v1/inbox` stays for pages posted from outside (apprise's JSON service, say), the delivery id
# in the `X-Vigil-Page` header so the inbox can join what arrived with the incident it belongs to.

INBOX_PATH = "/api/v1/inbox"
PAGE_HEADER = "X-Vigil-Page"


class LocalInboxSender:
    """The page lands in this notifier's own inbox, in the database, at once."""

    def __init__(self, inbox: Inbox, clock: Clock):
        self._inbox = inbox
        self._clock = clock

    def send(self, delivery: Delivery) -> SendResult:
        return SendResult(True, write=OwnWrite(self._inbox.record_arrivals, (delivery, self._clock())))
