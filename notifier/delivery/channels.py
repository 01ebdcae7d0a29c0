"""An outbox row's channel, looked up in the on-call config: its sender and its throttle limit."""

from __future__ import annotations

from vigil.notifier.deliveries import Delivery
from vigil.notifier.delivery.apprise_sender import AppriseSender
from vigil.notifier.delivery.base import Sender
from vigil.notifier.delivery.inbox_sender import InboxSender
from vigil.oncall.model import AppriseChannel, Channel, InboxChannel, OncallConfig
from vigil.oncall.routing import channel_of


class Channels:
    def __init__(self, oncall: OncallConfig, inbox: InboxSender, default_per_minute: int):
        self._oncall = oncall
        self._inbox = inbox
        self._default_per_minute = default_per_minute

    def sender_for(self, delivery: Delivery) -> Sender | None:
        """The sender of `delivery`'s channel; None when the on-call config no longer has it."""
        channel = self._channel(delivery)
        if isinstance(channel, InboxChannel):
            return self._inbox
        if isinstance(channel, AppriseChannel):
            return AppriseSender(channel.url)  # one apprise object per recipient and page
        return None

    def per_minute(self, delivery: Delivery) -> int | None:
        """The throttle limit of `delivery`'s channel; None (unlimited) for the local inbox."""
        channel = self._channel(delivery)
        if isinstance(channel, AppriseChannel):
            return channel.max_per_minute or self._default_per_minute
        return None

    def _channel(self, delivery: Delivery) -> Channel | None:
        return channel_of(self._oncall, delivery.target, delivery.channel_index, delivery.channel_type)
