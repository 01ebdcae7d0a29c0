"""The one interface every integration implements: send one outbox delivery, say how it went."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from vigil.notifier.deliveries import Delivery


@dataclass(frozen=True)
class SendResult:
    ok: bool
    error: str | None = None


class Sender(Protocol):
    """One recipient channel (an apprise URL, the local inbox…)."""

    def send(self, delivery: Delivery) -> SendResult: ...
