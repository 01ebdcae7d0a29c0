"""Classifying a series before choosing its model (the "classify first, then model" approach).

Rules, applied in this order on the regular-grid series (NaN gaps ignored); the first that holds wins:

1. **spiky** (sparse or spiky): at least half of the points share one value while the others differ
   (e.g. an error rate that is mostly 0), or at least 1 % of the points lie more than 6 robust sigmas
   from the local level (the median of their 1-hour block).
2. **periodic**: the series spans at least 2 days and, after removing a resistant linear trend, a
   time-of-day profile (plus day-of-week offsets when it spans at least 8 days) explains at least 30 %
   of the variance.
3. **trending** / **level_shift**: on 1-hour block medians, either a straight line or the best single
   split into two levels explains at least 50 % of the variance; whichever leaves less error wins (a
   ramp is fitted better by a line, a step by a split).
4. **stable**: everything else (including constant series and series too short to judge).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from aiops.baseline.robust import (
    DAY_S,
    best_split,
    block_medians,
    grouped_quantile,
    robust_sigma,
    three_group_line,
)
from aiops.baseline.seasonal import seasonal_fit

CLASSES = ("periodic", "stable", "trending", "spiky", "level_shift")

SPIKE_SIGMAS = 6.0
SPIKE_SHARE = 0.01
MODE_SHARE = 0.5
SEASONAL_R2 = 0.3
SHIFT_OR_TREND_R2 = 0.5
MIN_POINTS = 24


@dataclass(frozen=True)
class Classification:
    """The class of a series and the figures the decision rested on (kept in the model store)."""

    kind: str
    evidence: dict[str, float]


def block_size(step: float) -> int:
    """Grid points per 1-hour block (at least 4, so a block median smooths noise)."""
    return max(4, int(round(3600.0 / step)))


def classify(t: np.ndarray, x: np.ndarray, step: float) -> Classification:
    """Class of the series sampled at grid times `t` with values `x` (NaN = gap)."""
    finite = np.isfinite(x)
    tf, xf = t[finite], x[finite]
    if xf.size < MIN_POINTS or np.all(xf == xf[0]):
        return Classification("stable", {"points": float(xf.size)})

    block = block_size(step)
    bt, bm, index = block_medians(t, x, block)
    spiky = _spiky_evidence(xf, x, index, finite, block)
    if spiky["mode_share"] >= MODE_SHARE or spiky["spike_share"] >= SPIKE_SHARE:
        return Classification("spiky", spiky)

    span = float(tf[-1] - tf[0])
    if span >= 2 * DAY_S:
        intercept, slope = three_group_line(tf, xf)
        detrended = xf - (intercept + slope * tf)
        fit = seasonal_fit(tf, detrended, step, weekly=span >= 8 * DAY_S)
        total = float(np.var(detrended))
        r2 = 1.0 - float(np.var(detrended - fit.expected(tf))) / total if total > 0 else 0.0
        if r2 >= SEASONAL_R2:
            return Classification("periodic", {"seasonal_r2": r2, "weekly": float(fit.weekday is not None)})

    if bm.size >= 4:
        ss = float(np.sum((bm - bm.mean()) ** 2))
        if ss > 0:
            slope, intercept = np.polyfit(bt - bt[0], bm, 1)
            sse_line = float(np.sum((bm - (intercept + slope * (bt - bt[0]))) ** 2))
            _, sse_split = best_split(bm)
            r2_line, r2_split = 1 - sse_line / ss, 1 - sse_split / ss
            evidence = {"line_r2": r2_line, "split_r2": r2_split}
            if max(r2_line, r2_split) >= SHIFT_OR_TREND_R2:
                return Classification("level_shift" if sse_split < sse_line else "trending", evidence)
    return Classification("stable", {"sigma": robust_sigma(xf)})


def _spiky_evidence(xf, x, index, finite, block) -> dict[str, float]:
    """Share of the most common value, and share of points far from their block's median."""
    _, counts = np.unique(xf, return_counts=True)
    mode_share = float(counts.max() / xf.size)
    nb = -(-x.size // block)
    level = grouped_quantile(index[finite], xf, 0.5, nb)[index[finite]]
    resid = xf - level
    sigma = robust_sigma(resid)
    if sigma == 0:
        spike_share = float(np.mean(resid != 0))
    else:
        spike_share = float(np.mean(np.abs(resid) > SPIKE_SIGMAS * sigma))
    return {"mode_share": mode_share, "spike_share": spike_share}
