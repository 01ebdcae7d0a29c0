"""The series type shared by history readers and the baseline models."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

# Prometheus metric-name suffixes that mark a monotonic counter (or a counter-like histogram part).
COUNTER_SUFFIXES = ("_total", "_count", "_sum", "_bucket")


class HistoryError(Exception):
    """History could not be read: unreachable source, bad query or bad file (message says which)."""


@dataclass
class Series:
    """One metric series: its name, labels (without `__name__`) and samples in time order.

    `timestamps` are Unix seconds (float64), `values` float64 with NaN for gaps.
    """

    name: str
    labels: dict[str, str]
    timestamps: np.ndarray
    values: np.ndarray
    is_counter: bool = field(default=False)

    def __post_init__(self) -> None:
        self.timestamps = np.asarray(self.timestamps, dtype=np.float64)
        self.values = np.asarray(self.values, dtype=np.float64)
        if self.timestamps.shape != self.values.shape:
            raise ValueError("timestamps and values differ in length")

    @property
    def key(self) -> tuple[str, tuple[tuple[str, str], ...]]:
        """Identity of the series: name and sorted labels."""
        return self.name, tuple(sorted(self.labels.items()))

    def describe(self) -> str:
        """PromQL-like text of the series identity, e.g. `up{job="x"}`."""
        inner = ",".join(f'{k}="{v}"' for k, v in sorted(self.labels.items()))
        return f"{self.name}{{{inner}}}" if inner else self.name


def looks_like_counter(name: str) -> bool:
    """True for names that follow the Prometheus counter naming convention."""
    return name.endswith(COUNTER_SUFFIXES)
