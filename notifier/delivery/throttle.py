"""Throttle stage: at most N pages per recipient channel per minute; the rest wait, none are dropped."""

from __future__ import annotations

from collections import deque

WINDOW_S = 60.0


class Throttle:
    def __init__(self, max_per_minute: int):
        self._max = max_per_minute
        self._sent: dict[tuple[str, int], deque[float]] = {}

    def wait_for(self, key: tuple[str, int], now: float) -> float:
        """Seconds `key` must wait before its next page (0: send now, and it is counted)."""
        sent = self._sent.setdefault(key, deque())
        while sent and sent[0] <= now - WINDOW_S:
            sent.popleft()
        if len(sent) >= self._max:
            return sent[0] + WINDOW_S - now
        sent.append(now)
        return 0.0
