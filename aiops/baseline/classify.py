"""Classifying a series before choosing its model (the "classify first, then model" approach).

Rules, applied in this order on the regular-grid series (NaN gaps ignored); the first that holds wins:

1. **spiky** (sparse or spiky): at least half of the points share one value while the others differ
   (e.g. an error rate that is mostly 0), or at least 1 % of the points lie more than 6 robust sigmas
   from the local level (the median of their 1-hour block).
2. **periodic**: the series spans at least 2 days and, after removing a resistant linear trend, a
   time-of-day profile (plus day-of-week offsets when it spans at least 13 days) explains at least
   30 % of the variance *out of sample* (the profile learned on odd days, or odd weeks when weekly,
   predicts even ones and vice versa; cross-fitting keeps a level change, which a profile can absorb in
   sample, from passing for seasonality) — and at least as much as rule 3's shapes explain (when they
   explain more, rule 3 decides; if they stay under its 50 %, the series is still periodic).
3. **trending** / **level_shift**: on 1-hour block medians, either a straight line or a piecewise
   constant fit with at most two level changes (greedy best splits) explains at least 50 % of the
   variance; whichever leaves less error wins (a ramp is fitted better by a line, steps by levels).
4. **stable**: everything else (including constant series and series too short to judge).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vigil.aiops.baseline.robust import (
    DAY_S,
    block_medians,
    grouped_quantile,
    robust_sigma,
    three_group_line,
    two_cut_sse,
)
from vigil.aiops.baseline.seasonal import WEEKLY_MIN_SPAN_S, seasonal_fit

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

    evidence = {"seasonal_r2": 0.0, "line_r2": 0.0, "split_r2": 0.0}
    span = float(tf[-1] - tf[0])
    weekly = span >= WEEKLY_MIN_SPAN_S
    if span >= 2 * DAY_S:
        intercept, slope = three_group_line(tf, xf)
        evidence["seasonal_r2"] = cross_fitted_seasonal_r2(tf, xf - (intercept + slope * tf), step, weekly)
    if bm.size >= 4 and (ss := float(np.sum((bm - bm.mean()) ** 2))) > 0:
        slope, intercept = np.polyfit(bt - bt[0], bm, 1)
        evidence["line_r2"] = 1 - float(np.sum((bm - (intercept + slope * (bt - bt[0]))) ** 2)) / ss
        evidence["split_r2"] = 1 - two_cut_sse(bm) / ss
    shape_r2 = max(evidence["line_r2"], evidence["split_r2"])
    if evidence["seasonal_r2"] >= SEASONAL_R2 and evidence["seasonal_r2"] >= shape_r2:
        return Classification("periodic", {**evidence, "weekly": float(weekly)})
    if shape_r2 >= SHIFT_OR_TREND_R2:
        kind = "level_shift" if evidence["split_r2"] > evidence["line_r2"] else "trending"
        return Classification(kind, evidence)
    if evidence["seasonal_r2"] >= SEASONAL_R2:
        return Classification("periodic", {**evidence, "weekly": float(weekly)})
    return Classification("stable", {**evidence, "sigma": robust_sigma(xf)})


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


def cross_fitted_seasonal_r2(t: np.ndarray, x: np.ndarray, step: float, weekly: bool) -> float:
    """Share of variance a seasonal profile explains on the half of the days (weeks) it was not fitted on."""
    period = 7 * DAY_S if weekly else DAY_S
    fold = (t // period).astype(np.int64) % 2
    total = float(np.sum((x - x.mean()) ** 2))
    if total <= 0:
        return 0.0
    sse = 0.0
    for held in (0, 1):
        train, test = fold != held, fold == held
        if not train.any() or not test.any():
            return 0.0
        fit = seasonal_fit(t[train], x[train], step, weekly=weekly)
        sse += float(np.sum((x[test] - fit.expected(t[test])) ** 2))
    return 1.0 - sse / total
