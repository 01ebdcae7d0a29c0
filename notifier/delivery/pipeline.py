"""The delivery pipeline behind one interface: dedup → route → throttle → send → retry.

- dedup: repeated webhook deliveries never reach here (the store answers them as duplicates), and a
  page is enqueued once per (notification, target, channel) — a unique key in the outbox;
- route: `plan()` picks the target's channels from the on-call config and writes the page text; the
  store enqueues them in the notification's own transaction (outbox);
- throttle (apprise channels only; the local inbox is not limited), send, retry: the `DeliveryWorker` (worker.py) drains the outbox.
"""

from __future__ import annotations

from vigil.notifier.delivery.apprise_sender import AppriseSender
from vigil.notifier.delivery.base import Sender
from vigil.notifier.delivery.compose import compose_page
from vigil.notifier.delivery.inbox_sender import InboxSender
from vigil.notifier.delivery.route import route_page
from vigil.notifier.incidents import IncidentDecision
from vigil.notifier.models import WebhookPayload
from vigil.notifier.store import Delivery, NewDelivery
from vigil.oncall.model import AppriseChannel, Channel, InboxChannel, OncallConfig


class DeliveryPipeline:
    """Turns incident decisions into outbox rows, and outbox rows into senders."""

    def __init__(self, oncall: OncallConfig, notifier_url: str, token: str, default_per_minute: int):
        self.oncall = oncall
        self._inbox = InboxSender(notifier_url, token)
        self._default_per_minute = default_per_minute

    def plan(self, payload: WebhookPayload, decision: IncidentDecision, incident_id: int,
             labels: dict) -> list[NewDelivery]:
        text = compose_page(payload, decision.page_status, incident_id)
        return [NewDelivery(route.target, route.channel_index, route.channel_type, text.title, text.body)
                for route in route_page(self.oncall, labels)]

    def pages_per_minute(self, delivery: Delivery) -> int | None:
        """The throttle limit of `delivery`'s channel; None (unlimited) for the local inbox."""
        channel = self._channel(delivery)
        if isinstance(channel, AppriseChannel):
            return channel.max_per_minute or self._default_per_minute
        return None

    def sender_for(self, delivery: Delivery) -> Sender | None:
        """The sender of `delivery`'s channel; None when the on-call config no longer has it."""
        channel = self._channel(delivery)
        if isinstance(channel, InboxChannel):
            return self._inbox
        if isinstance(channel, AppriseChannel):
            return AppriseSender(channel.url)
        return None

    def _channel(self, delivery: Delivery) -> Channel | None:
        target = self.oncall.targets.get(delivery.target)
        if target is None or delivery.channel_index >= len(target.channels):
            return None
        channel = target.channels[delivery.channel_index]
        return channel if channel.type == delivery.channel_type else None
