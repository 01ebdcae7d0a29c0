"""NAB's relative-entropy detector (Wang et al., 2011), reimplemented from its published description:
a reference for checking our NAB scorer (published scores 54.6 / 47.6 / 58.8).

Values are quantised into 5 equal-width bins spanning the series' minimum..maximum. For every window of
the last 52 points, the bin histogram is compared with each hypothesis seen so far by the test
statistic 2·W·KL(window ‖ hypothesis) against the 99 % point of χ² with 4 degrees of freedom. A window
that matches no hypothesis becomes a new one and scores 1; a window matching a hypothesis seen only
once before (the closest match) also scores 1; everything else scores 0.

**Not causal, by NAB's convention**: the bin edges come from the minimum and maximum of the *whole*
series, given up front (`low`, `high`); NAB hands every detector these two numbers. That is why this
detector is available to `vigil aiops evaluate nab` only, never to `vigil aiops detect`. Given the
range, scores depend on past points only.
"""

from __future__ import annotations

import math
from collections import deque

import numpy as np

from vigil.aiops.detect.base import Detector

BINS = 5
WINDOW = 52
# chi2.isf(0.01, BINS - 1): the statistic's 99 % point, computed once with scipy.stats.chi2
THRESHOLD = 13.276704135987625
MATCHES_BEFORE_NORMAL = 1  # a hypothesis seen this often or less is still anomalous


class RelativeEntropyDetector(Detector):
    name = "relative-entropy"

    def __init__(self, low: float, high: float):
        self.low, self.high = float(low), float(high)
        self._step = (self.high - self.low) / BINS
        self._window: deque[int] = deque()
        self._counts = [0] * BINS
        self._hypotheses: list[list[float]] = []
        self._seen: list[int] = []

    def parameters(self) -> dict:
        return {"bins": BINS, "window": WINDOW}

    def _bin(self, value: float) -> int:
        # ceil((v - low) / step) gives 0..BINS; NAB's histogram puts 0 in the first bin and the top
        # edge (BINS) together with BINS - 1 in the last one
        return min(math.ceil((value - self.low) / self._step), BINS - 1)

    def _closest(self, window: list[float]) -> int:
        best, best_stat = -1, math.inf
        for k, hypothesis in enumerate(self._hypotheses):
            kl = 0.0
            for p, q in zip(window, hypothesis):
                if p > 0.0:
                    if q == 0.0:
                        kl = math.inf
                        break
                    kl += p * math.log(p / q)
            stat = 2 * WINDOW * kl
            if stat < THRESHOLD and stat < best_stat:
                best, best_stat = k, stat
        return best

    def update(self, timestamp: str, value: float) -> float:
        if self.high == self.low:  # a constant series: nothing is ever anomalous
            return 0.0
        b = self._bin(value)
        self._window.append(b)
        self._counts[b] += 1
        if len(self._window) > WINDOW:
            self._counts[self._window.popleft()] -= 1
        if len(self._window) < WINDOW:
            return 0.0
        distribution = [c / WINDOW for c in self._counts]
        if not self._hypotheses:
            self._hypotheses.append(distribution)
            self._seen.append(1)
            return 0.0
        k = self._closest(distribution)
        if k == -1:
            self._hypotheses.append(distribution)
            self._seen.append(1)
            return 1.0
        self._seen[k] += 1
        return 1.0 if self._seen[k] <= MATCHES_BEFORE_NORMAL else 0.0


def for_series(values: np.ndarray) -> RelativeEntropyDetector:
    """The detector as NAB runs it on a series: with that series' minimum and maximum."""
    return RelativeEntropyDetector(float(np.min(values)), float(np.max(values)))
