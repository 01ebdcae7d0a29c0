"""Synthetic series of each class, for tests, the benchmark and trying the models out.

Each generator is deterministic for a given numpy Generator and returns values for grid times `t`.
Shapes follow what GPU clusters show: utilisation with daily/weekly cycles, steady temperatures,
filling disks, jobs that move a node to a new level, and error counts that are mostly zero.
"""

from __future__ import annotations

import numpy as np

from vigil.aiops.baseline.robust import DAY_S
from vigil.aiops.baseline.seasonal import weekday_of


def periodic(t: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Daily cycle with a weekend dip, plus Gaussian noise."""
    level, amp = rng.uniform(40, 60), rng.uniform(15, 30)
    phase = rng.uniform(0, 2 * np.pi)
    weekend = np.where(weekday_of(t) >= 5, -rng.uniform(5, 15), 0.0)
    return level + amp * np.sin(2 * np.pi * (t % DAY_S) / DAY_S + phase) + weekend + rng.normal(0, amp / 10, t.size)


def stable(t: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A constant level with Gaussian noise."""
    return rng.uniform(30, 80) + rng.normal(0, rng.uniform(0.5, 2), t.size)


def trending(t: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A steady ramp (e.g. a filling disk) with noise: it moves 10-20 noise sigmas over the window."""
    sigma = rng.uniform(0.5, 2)
    span = t[-1] - t[0]
    return rng.uniform(10, 50) + rng.choice([-1, 1]) * rng.uniform(10, 20) * sigma * (t - t[0]) / span + rng.normal(0, sigma, t.size)


def level_shift(t: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One or two abrupt changes of level, each of 8-15 noise sigmas."""
    sigma = rng.uniform(0.5, 2)
    x = rng.uniform(20, 60) + rng.normal(0, sigma, t.size)
    for _ in range(rng.integers(1, 3)):
        at = t[0] + rng.uniform(0.2, 0.8) * (t[-1] - t[0])
        x = x + np.where(t >= at, rng.choice([-1, 1]) * rng.uniform(8, 15) * sigma, 0.0)
    return x


def spiky(t: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Mostly zero with rare bursts (an error or retry rate)."""
    x = np.zeros(t.size)
    hits = rng.choice(t.size, size=max(3, t.size // 100), replace=False)
    x[hits] = rng.exponential(5.0, hits.size) + 1.0
    return x


GENERATORS = {"periodic": periodic, "stable": stable, "trending": trending, "level_shift": level_shift, "spiky": spiky}


def grid(days: float = 14, step: float = 300.0, end: float = 1_767_225_600.0) -> np.ndarray:
    """Grid times of `days` days at `step` seconds ending at `end` (default 2026-01-01 00:00 UTC)."""
    n = int(round(days * DAY_S / step))
    return end - step * np.arange(n)[::-1]
