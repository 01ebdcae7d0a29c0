"""O(1) trailing-window statistics for streaming detectors."""

from __future__ import annotations

import math
from collections import deque


class RollingMoments:
    """Mean and sample standard deviation of the last `size` values pushed.

    Sums are kept relative to the first value seen, which keeps the variance exact enough for series
    with large offsets (byte counters around 1e9) where raw sums of squares would cancel badly.
    """

    def __init__(self, size: int):
        self._values: deque[float] = deque()
        self._size = size
        self._origin: float | None = None
        self._sum = 0.0
        self._sumsq = 0.0

    def __len__(self) -> int:
        return len(self._values)

    def push(self, value: float) -> None:
        if self._origin is None:
            self._origin = value
        v = value - self._origin
        self._values.append(v)
        self._sum += v
        self._sumsq += v * v
        if len(self._values) > self._size:
            old = self._values.popleft()
            self._sum -= old
            self._sumsq -= old * old

    def mean(self) -> float:
        return self._sum / len(self._values) + self._origin

    def std(self) -> float:
        n = len(self._values)
        if n < 2:
            return 0.0
        var = (self._sumsq - self._sum * self._sum / n) / (n - 1)
        return math.sqrt(var) if var > 0.0 else 0.0


class RollingMax:
    """Maximum of the last `size` values pushed (monotonic queue: amortised O(1) per push)."""

    def __init__(self, size: int):
        self._size = size
        self._count = 0
        self._queue: deque[tuple[int, float]] = deque()  # (position, value), values decreasing

    def push(self, value: float) -> None:
        queue = self._queue
        while queue and queue[-1][1] <= value:
            queue.pop()
        queue.append((self._count, value))
        self._count += 1
        if queue[0][0] <= self._count - 1 - self._size:
            queue.popleft()

    def max(self, default: float = 0.0) -> float:
        return self._queue[0][1] if self._queue else default


class Range:
    """Running minimum and maximum of everything pushed so far."""

    def __init__(self):
        self.low = math.inf
        self.high = -math.inf

    def push(self, value: float) -> None:
        if value < self.low:
            self.low = value
        if value > self.high:
            self.high = value

    def width(self) -> float:
        return self.high - self.low if self.high >= self.low else 0.0


class WindowRange:
    """Running minimum and maximum of the last `size` values pushed (`Range`'s interface)."""

    def __init__(self, size: int):
        self._high = RollingMax(size)
        self._low = RollingMax(size)  # of the negated values

    def push(self, value: float) -> None:
        self._high.push(value)
        self._low.push(-value)

    @property
    def high(self) -> float:
        return self._high.max(-math.inf)

    @property
    def low(self) -> float:
        return -self._low.max(-math.inf)

    def width(self) -> float:
        return self.high - self.low if self.high >= self.low else 0.0


class History:
    """The last `size` values pushed, with O(1) access to the value k points ago (a ring buffer)."""

    def __init__(self, size: int):
        self._ring = [0.0] * size
        self._size = size
        self._count = 0

    def __len__(self) -> int:
        return min(self._count, self._size)

    def push(self, value: float) -> None:
        self._ring[self._count % self._size] = value
        self._count += 1

    def ago(self, k: int) -> float:
        """The value pushed k pushes ago (k = 1: the latest); k must be in 1..len(self)."""
        return self._ring[(self._count - k) % self._size]
