"""Throttle stage: at most N pages per recipient channel per minute; the rest wait, none are dropped.

The limit is the channel's `max_per_minute` (apprise channels; the notifier's default otherwise); the
local inbox is not limited. A page over the limit is postponed to the moment the window lets it out.
"""

from __future__ import annotations

import threading
from collections import deque
from typing import Callable

from vigil.notifier.deliveries import Delivery
from vigil.notifier.delivery.stage import Outcome, Page

WINDOW_S = 60.0


class ThrottleStage:
    name = "throttle"

    def __init__(self, per_minute: Callable[[Delivery], int | None]):
        self._per_minute = per_minute
        self._sent: dict[tuple[str, int], deque[float]] = {}
        self._lock = threading.Lock()  # pages of one batch pass the stages in parallel

    def __call__(self, page: Page) -> Page:
        if page.outcome is not None:
            return page
        delivery = page.delivery
        wait = self.wait_for((delivery.target, delivery.channel_index), page.now, self._per_minute(delivery))
        if wait > 0:
            return page.decided(Outcome("postponed", page.now, due_at=page.now + wait))
        return page

    def wait_for(self, key: tuple[str, int], now: float, per_minute: int | None) -> float:
        """Seconds `key` must wait before its next page (0: send now, and it is counted).

        `per_minute` None: the channel is not limited (the local inbox).
        """
        if per_minute is None:
            return 0.0
        with self._lock:
            sent = self._sent.setdefault(key, deque())
            while sent and sent[0] <= now - WINDOW_S:
                sent.popleft()
            if len(sent) >= per_minute:
                return sent[0] + WINDOW_S - now
            sent.append(now)
            return 0.0
