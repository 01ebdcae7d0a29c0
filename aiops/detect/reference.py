"""Reference detectors reimplemented from NAB's published descriptions, used to check our NAB scorer.

* `NullDetector` answers 0.5 for every point: NAB's baseline, which defines a normalised score of 0.
* `WindowedGaussianDetector`: the score of a point is one minus the two-sided Gaussian tail probability
  of its value under the mean and standard deviation of a trailing window of up to 6400 points; once
  the window is full the statistics are refreshed every 100 points (published standard score 39.6).
"""

from __future__ import annotations

import math

import numpy as np

from vigil.aiops.detect.base import Detector


class NullDetector(Detector):
    """Always 0.5: a detector that knows nothing."""

    name = "null"

    def update(self, timestamp: str, value: float) -> float:
        return 0.5

    def explain(self) -> str:
        return "the null detector scores every point 0.5"


class WindowedGaussianDetector(Detector):
    """Gaussian tail probability against a trailing window refreshed in steps."""

    name = "windowed-gaussian"

    def __init__(self, window: int = 6400, step: int = 100):
        self.window = window
        self.step = step
        self._data: list[float] = []
        self._pending: list[float] = []
        self._mean = 0.0
        self._std = 1.0
        self._m2 = 0.0  # Welford's running sum of squared deviations while the window fills

    def parameters(self) -> dict:
        return {"window": self.window, "step": self.step}

    @property
    def warming_up(self) -> bool:
        return len(self._data) <= 1  # the first point has no window to be compared with and scores 0

    def explain(self) -> str:
        why = getattr(self, "_why", None)
        if why is None:
            return ""
        value, z, mean, std, n = why
        return f"value {value:.6g} is {z:.2f} std from the mean {mean:.6g} (std {std:.6g}) of the last {n} points"

    def _grow(self, value: float) -> None:
        # while the window fills, statistics are refreshed on every point; Welford keeps that O(1)
        self._data.append(value)
        n = len(self._data)
        mean = self._mean if n > 1 else 0.0
        delta = value - mean
        mean += delta / n
        self._m2 = (self._m2 if n > 1 else 0.0) + delta * (value - mean)
        self._mean = mean
        self._set_std(math.sqrt(max(self._m2, 0.0) / n))

    def _set_std(self, std: float) -> None:
        # a constant window would give a zero width; a tiny one makes any change maximally surprising
        self._std = std if std > 0.0 else 1e-6

    def _slide(self) -> None:
        arr = np.asarray(self._data)
        self._mean = float(arr.mean())
        self._set_std(float(arr.std()))

    def update(self, timestamp: str, value: float) -> float:
        score = 0.0
        if self._data:
            z = abs(value - self._mean) / self._std
            # one minus the upper-tail probability Q(|z|): 0.5 at the mean, towards 1 far from it
            score = 1.0 - 0.5 * math.erfc(z / math.sqrt(2.0))
            if self.explaining:
                self._why = (value, z, self._mean, self._std, len(self._data))
        if len(self._data) < self.window:
            self._grow(value)
        else:
            self._pending.append(value)
            if len(self._pending) == self.step:
                self._data = self._data[self.step:] + self._pending
                self._pending = []
                self._slide()
        return score
