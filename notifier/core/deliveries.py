"""The delivery types: what the engine's intake asks the outbox to hold, and what the worker claims from it."""

from __future__ import annotations

from dataclasses import dataclass

DIGEST_KEY_PREFIX = "digest:"


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
    tier: int | None = None  # escalation tier (0-based); None for a legacy route's page
    contact: str | None = None  # the contact's name in the person's `contacts`
    page_key: str | None = None  # identity of an escalation page: enqueued once even by two notifiers


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
    tier: int | None = None
    contact: str | None = None
    page_key: str | None = None

    @property
    def is_digest(self) -> bool:
        """A storm-control digest standing for several pages (`delivery/stages.py`)."""
        return (self.page_key or "").startswith(DIGEST_KEY_PREFIX)
