"""An outbox row's contact, looked up in the on-call config: its sender, throttle and storm limits.

A row names a person (`target`), the position of one of their contacts (`channel_index`) and its kind
(`channel_type`); `vigil.oncall.plan.contact_at` finds that contact, for people and for first-version
targets alike. An inbox contact goes to the local inbox, where the page shows under the contact's
kind (`phone`, `sms` …); any other goes through apprise, one apprise object per recipient.
"""

from __future__ import annotations

from vigil.notifier.deliveries import Delivery
from vigil.notifier.delivery.apprise_sender import AppriseSender
from vigil.notifier.delivery.base import Sender
from vigil.oncall.contacts import Contact
from vigil.oncall.model import OncallConfig
from vigil.oncall.plan import ContactRef, contact_at, next_contact


class Channels:
    def __init__(self, oncall: OncallConfig, inbox: Sender, default_per_minute: int):
        self._oncall = oncall
        self._inbox = inbox
        self._default_per_minute = default_per_minute

    def sender_for(self, delivery: Delivery) -> Sender | None:
        """The sender of `delivery`'s contact; None when the on-call config no longer has it."""
        contact = self._contact(delivery)
        if contact is None:
            return None
        if contact.inbox:
            return self._inbox
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
