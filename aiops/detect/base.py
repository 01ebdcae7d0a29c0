"""The detector contract: streaming and strictly causal.

A detector sees one point at a time through `update(timestamp, value)` and returns that point's anomaly
score in [0, 1] at once. It never receives a later point before answering, so the score at row i can
only depend on rows 0..i: causality is a property of the interface, not a promise. `score_series` is a
convenience that feeds a whole series through `update` in order.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Sequence

import numpy as np


def check_warmup(name: str, warmup: int | None, probe: int) -> None:
    """ValueError for a warm-up that ends before the `probe` intervals a detector learns its step from."""
    if warmup is not None and warmup <= probe:
        raise ValueError(f"the {name} detector needs a warm-up of more than {probe} points "
                         f"(it learns the sampling interval from the first {probe}), got {warmup}")


class Detector(ABC):
    """A streaming anomaly detector. Make a new instance per series (it keeps per-series state)."""

    #: registry name, e.g. "vigil" or "windowed-gaussian"
    name: str = ""
    #: True when the detector takes `sensitivity` itself (`create`); otherwise `vigil aiops detect`
    #: maps a sensitivity onto the alarm threshold (`aiops.detect.labels.threshold_for`)
    own_sensitivity: bool = False
    #: set to True to make `update` keep what `explain` needs (off: no cost on the scoring path)
    explaining: bool = False

    @classmethod
    def create(cls, warmup: int | None = None, sensitivity: float | None = None) -> "Detector":
        """A detector for one series; `warmup` (points that never alarm) and `sensitivity` (0-1) where the
        detector has such settings. The default ignores both: the caller withholds labels itself."""
        return cls()

    @abstractmethod
    def update(self, timestamp: str, value: float) -> float:
        """Consume the next point and return its anomaly score in [0, 1]."""

    def explain(self) -> str:
        """Why the last `update` scored as it did: the test or band and its numbers (needs `explaining`)."""
        return ""

    @property
    def warming_up(self) -> bool:
        """Whether the last `update` fell in the detector's own warm-up (it scored 0 while learning).
        Read-only reporting for `vigil aiops detect`: scoring never looks at it."""
        return False

    def parameters(self) -> dict:
        """The settings that identify this detector's behaviour (recorded with benchmark runs)."""
        return {}

    def score_series(self, timestamps: Sequence[str], values: Sequence[float]) -> np.ndarray:
        """Scores for a whole series, computed point by point through `update`."""
        update = self.update
        out = np.empty(len(values), dtype=float)
        for i, (stamp, value) in enumerate(zip(timestamps, values)):
            out[i] = update(stamp, float(value))
        return out
