"""Scoring dense anomaly labels against labelled segments, two ways.

* **point-adjusted** (the rule used for operations KPIs, e.g. the AIOps Challenge and FluxEV): a
  labelled segment counts as found — all its points true positives — when one of its first `delay`
  points (7 by default) is flagged; otherwise all its points are false negatives, however many later
  points are flagged. A flag outside every segment is a false positive.
* **strict** point-wise: every point on its own (flag and label: TP; flag only: FP; label only: FN).

Point adjustment inflates scores (one flag buys a 300-point segment), so both are reported. Counts add
up over series (micro-average) before precision, recall and F1 are computed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

DELAY = 7


@dataclass(frozen=True)
class Counts:
    tp: int = 0
    fp: int = 0
    fn: int = 0

    def __add__(self, other: "Counts") -> "Counts":
        return Counts(self.tp + other.tp, self.fp + other.fp, self.fn + other.fn)

    @property
    def precision(self) -> float:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else 0.0

    @property
    def recall(self) -> float:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else 0.0

    @property
    def f1(self) -> float:
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r else 0.0

    def as_dict(self) -> dict:
        return {"precision": round(self.precision, 4), "recall": round(self.recall, 4), "f1": round(self.f1, 4),
                "tp": self.tp, "fp": self.fp, "fn": self.fn}


def segments(labels: np.ndarray) -> list[tuple[int, int]]:
    """[start, end) of every run of True in a boolean array."""
    padded = np.concatenate(([False], np.asarray(labels, dtype=bool), [False]))
    edges = np.flatnonzero(padded[1:] != padded[:-1])
    return [(int(a), int(b)) for a, b in zip(edges[::2], edges[1::2])]


def _check(flags: np.ndarray, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    flags, labels = np.asarray(flags, dtype=bool), np.asarray(labels, dtype=bool)
    if flags.shape != labels.shape:
        raise ValueError(f"{flags.size} flags for {labels.size} labels")
    return flags, labels


def point_adjusted_counts(flags: np.ndarray, labels: np.ndarray, delay: int = DELAY) -> Counts:
    flags, labels = _check(flags, labels)
    tp = fn = 0
    for a, b in segments(labels):
        if flags[a:min(b, a + delay)].any():
            tp += b - a
        else:
            fn += b - a
    return Counts(tp, int(np.sum(flags & ~labels)), fn)


def strict_counts(flags: np.ndarray, labels: np.ndarray) -> Counts:
    flags, labels = _check(flags, labels)
    return Counts(int(np.sum(flags & labels)), int(np.sum(flags & ~labels)), int(np.sum(~flags & labels)))
