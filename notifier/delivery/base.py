"""The one interface every integration implements: send one outbox delivery, say how it went."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Protocol

import sqlalchemy as sa

from vigil.notifier.deliveries import Delivery


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


class Sender(Protocol):
    """One recipient channel (an apprise URL, the local inbox…)."""

    def send(self, delivery: Delivery) -> SendResult: ...
