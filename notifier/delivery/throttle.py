"""Throttle stage: at most N pages per recipient channel per minute; the rest wait, none are dropped."""

from __future__ import annotations

from collections import deque

WINDOW_S = 60.0


class Throttle:
    def __init__(self):
        self._sent: dict[tuple[str, int], deque[float]] = {}

    def wait_for(self, key: tuple[str, int], now: float, per_minute: int | None) -> float:
        """Seconds `key` must wait before its next page (0: send now, and it is counted).

        `per_minute` None: the channel is not limited (the local inbox).
        """
        if per_minute is None:
            return 0.0
        sent = self._sent.setdefault(key, deque())
        while sent and sent[0] <= now - WINDOW_S:
            sent.popleft()
        if len(sent) >= per_minute:
            return sent[0] + WINDOW_S - now
        sent.append(now)
        return 0.0
