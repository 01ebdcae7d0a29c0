"""The delivery types: what the route stage asks the outbox to hold, and what the worker claims from it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable

from vigil.notifier.incidents import IncidentDecision
from vigil.notifier.models import WebhookPayload


@dataclass(frozen=True)
class NewDelivery:
    """A page to enqueue in the outbox, in the same transaction as its notification."""

    target: str
    channel_index: int
    channel_type: str
    title: str
    body: str
    # not to be sent before this many seconds have passed: the wait of an escalation step (0: at once)
    delay_s: float = 0.0


@dataclass(frozen=True)
class Delivery:
    """An outbox row the worker has claimed and is about to pass through the delivery stages."""

    id: int
    incident_id: int
    target: str
    channel_index: int
    channel_type: str
    title: str
    body: str
    page_status: str
    attempts: int
    created_at: float


# (payload, decision, incident_id, incident labels) -> pages to enqueue: the route stage
PagePlanner = Callable[[WebhookPayload, IncidentDecision, int, dict], Iterable[NewDelivery]]
