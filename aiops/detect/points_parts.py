"""The pieces of the point-labelling detector (`aiops.detect.points`): a rolling median, a normaliser
that keeps the upper and lower quantiles of a residual over a trailing window, and a per-slot history that
answers "what did this series do at this time of day on the last few days".

Everything is causal: a value is pushed after the point it belongs to has been scored.
"""

from __future__ import annotations

import math
from bisect import bisect_left, insort
from collections import deque

import numpy as np


class RollingMedian:
    """Median of the last `size` values pushed (a sorted copy beside the arrival order: O(size) per push)."""

    def __init__(self, size: int):
        self._size = size
        self._order: deque[float] = deque()
        self._sorted: list[float] = []

    def __len__(self) -> int:
        return len(self._order)

    @property
    def full(self) -> bool:
        return len(self._order) >= self._size

    def push(self, value: float) -> None:
        self._order.append(value)
        insort(self._sorted, value)
        if len(self._order) > self._size:
            old = self._order.popleft()
            del self._sorted[bisect_left(self._sorted, old)]

    def clear(self) -> None:
        self._order.clear()
        self._sorted.clear()

    def median(self) -> float:
        values, n = self._sorted, len(self._sorted)
        return values[n // 2] if n % 2 else 0.5 * (values[n // 2 - 1] + values[n // 2])


class Normaliser:
    """The `quantile` and `1 - quantile` points of a residual over its last `size` values: how far up and
    how far down the residual normally goes. Recomputed every `refresh` pushes (cheap, and steady between
    refreshes); usable once it holds `ready` values."""

    def __init__(self, size: int, quantile: float, refresh: int, ready: int):
        self._ring = np.zeros(size)
        self._count = 0
        self._since = 0
        self._quantiles = (quantile, 1.0 - quantile)
        self._refresh = max(1, refresh)
        self._ready = max(1, min(ready, size))
        self.up = self.down = 0.0  # how far above (below) zero the residual goes at the quantile

    @property
    def ready(self) -> bool:
        return self._count >= self._ready

    def push(self, residual: float) -> None:
        size = self._ring.size
        self._ring[self._count % size] = residual
        self._count += 1
        self._since += 1
        if self._count >= self._ready and (self._since >= self._refresh or self._count == self._ready):
            high, low = np.quantile(self._ring[:min(self._count, size)], self._quantiles)
            self.up, self.down = max(float(high), 0.0), max(-float(low), 0.0)
            self._since = 0

    def ratio(self, residual: float, floor: float) -> float:
        """|residual| over the normal reach on its side (each reach at least `floor`); 0 until ready."""
        if not self.ready:
            return 0.0
        return residual / max(self.up, floor) if residual > 0 else -residual / max(self.down, floor)

    def reach(self, direction: int, floor: float) -> float:
        return max(self.up if direction > 0 else self.down, floor)


class SlotHistory:
    """Values by time slot (the point's index on the series' regular grid) over the last `keep_days` periods.

    `expected(slot, days)` is the median of the values at the same time of day on each of the given days
    back (1: yesterday), `slack` slots either side (a pattern that runs a few minutes early or late still
    matches); None while fewer than `min_values` such values exist (the first days, or after a long gap)."""

    def __init__(self, period: int, keep_days: int, slack: int, min_values: int = 3):
        self._period = period
        self._keep = keep_days
        self._slack = slack
        self._min_values = min_values
        self._values: dict[int, float] = {}
        self._slots: deque[int] = deque()

    def push(self, slot: int, value: float) -> None:
        if slot not in self._values:
            self._slots.append(slot)
        self._values[slot] = value
        oldest = slot - self._keep * self._period - self._slack
        while self._slots and self._slots[0] < oldest:
            del self._values[self._slots.popleft()]

    def expected(self, slot: int, days) -> float | None:
        values, found = self._values, []
        for day in days:
            centre = slot - day * self._period
            for s in range(centre - self._slack, centre + self._slack + 1):
                v = values.get(s)
                if v is not None:
                    found.append(v)
        if len(found) < self._min_values:
            return None
        found.sort()
        n = len(found)
        return found[n // 2] if n % 2 else 0.5 * (found[n // 2 - 1] + found[n // 2])


def value_floor(magnitude: float) -> float:
    """The least reach a normaliser counts for: a series flat until now makes its first move huge, not
    infinite."""
    return 1e-9 * max(magnitude, 1.0) if math.isfinite(magnitude) else 1e-9
