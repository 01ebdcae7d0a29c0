"""One model per class, and the bands they give.

Every model has an expected value E(t) and residual quantiles (lo ≤ 0 ≤ hi) learned from training
residuals x − E(t). The band at time t is

    upper = E(t) + MARGIN × max(hi, floor) / sensitivity
    lower = E(t) + MARGIN × min(lo, −floor) / sensitivity

so sensitivity 1 puts the edges 25 % beyond the 0.5 %/99.5 % training residual quantiles, 2 halves the
width (more alerts), 0.5 doubles it. `floor` keeps a constant series' band from collapsing to a line.

| class       | E(t)                                                        | residual quantiles       |
|-------------|-------------------------------------------------------------|--------------------------|
| periodic    | time-of-day profile + day-of-week offset                    | hourly MAD × global z-quantiles |
| stable      | median                                                      | 0.5 % / 99.5 %           |
| trending    | resistant line (Tukey), extrapolated                        | 0.5 % / 99.5 %           |
| level_shift | median since the last level change                          | within-level, 0.5/99.5 % |
| spiky       | median                                                      | 0.1 % / 99.9 % (spikes are normal) |
"""

from __future__ import annotations

import numpy as np

from vigil.aiops.baseline.classify import block_size
from vigil.aiops.baseline.robust import (
    MAD_TO_SIGMA,
    best_split,
    block_medians,
    grouped_quantile,
    robust_sigma,
    three_group_line,
)
from vigil.aiops.baseline.seasonal import WEEKLY_MIN_SPAN_S, seasonal_fit, time_of_day_bin, weekday_of

MARGIN = 1.25
TAIL = 0.005
SPIKY_TAIL = 0.001
SPLIT_R2 = 0.5
MAX_SHIFTS = 4
HOURS = 24
MIN_PER_HOUR = 30
HOUR_SCALE_FLOOR = 0.5  # no hour's robust scale below this share of the median hour's


def fit_model(kind: str, t: np.ndarray, x: np.ndarray, step: float) -> dict:
    """Fit the model of class `kind` to finite samples; return its JSON-ready parameters."""
    finite = np.isfinite(x)
    tf, xf = t[finite], x[finite]
    if xf.size == 0:
        raise ValueError("no finite samples to fit")
    if kind == "periodic":
        model = _fit_periodic(tf, xf, step)
    elif kind == "trending":
        t0 = float(np.median(tf))
        intercept, slope = three_group_line(tf - t0, xf)
        model = {"t0": t0, "intercept": intercept, "slope": slope}
        model.update(_quantiles(xf - (intercept + slope * (tf - t0)), TAIL))
    elif kind == "level_shift":
        model = _fit_level_shift(t, x, step)
    elif kind in ("stable", "spiky"):
        level = float(np.median(xf))
        model = {"level": level}
        model.update(_quantiles(xf - level, SPIKY_TAIL if kind == "spiky" else TAIL))
    else:
        raise ValueError(f"unknown class {kind!r}")
    model["class"] = kind
    model["floor"] = model_floor(xf)
    return model


def model_floor(x: np.ndarray) -> float:
    """Smallest band half-width: a millionth of the typical magnitude (so constant series get a band)."""
    return max(1e-9, 1e-6 * float(np.median(np.abs(x))))


def expected(model: dict, t: np.ndarray) -> np.ndarray:
    """Expected value of the model at Unix times `t`."""
    t = np.asarray(t, dtype=np.float64)
    kind = model["class"]
    if kind == "periodic":
        profile = np.asarray(model["profile"])
        value = profile[time_of_day_bin(t, model["bin_s"], profile.size)]
        if model.get("weekday") is not None:
            value = value + np.asarray(model["weekday"])[weekday_of(t)]
        return value
    if kind == "trending":
        return model["intercept"] + model["slope"] * (t - model["t0"])
    return np.full(t.shape, float(model["level"]))


def band(model: dict, t: np.ndarray, sensitivity: float = 1.0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(expected, lower, upper) at Unix times `t` for the given sensitivity (> 0)."""
    if not sensitivity > 0:
        raise ValueError("sensitivity must be positive")
    t = np.asarray(t, dtype=np.float64)
    value = expected(model, t)
    lo, hi = np.asarray(model["resid_lo"], dtype=np.float64), np.asarray(model["resid_hi"], dtype=np.float64)
    if lo.ndim == 1 and lo.size > 1:  # per hour of day
        hour = ((t % 86_400.0) // 3600.0).astype(np.int64) % lo.size
        lo, hi = lo[hour], hi[hour]
    floor = model["floor"]
    scale = MARGIN / sensitivity
    return value, value + scale * np.minimum(lo, -floor), value + scale * np.maximum(hi, floor)


def _quantiles(resid: np.ndarray, tail: float) -> dict:
    lo, hi = np.quantile(resid, [tail, 1 - tail])
    return {"resid_lo": float(min(lo, 0.0)), "resid_hi": float(max(hi, 0.0))}


def _fit_periodic(t: np.ndarray, x: np.ndarray, step: float) -> dict:
    span = float(t[-1] - t[0]) if t.size else 0.0
    fit = seasonal_fit(t, x, step, weekly=span >= WEEKLY_MIN_SPAN_S)
    resid = x - fit.expected(t)
    model = {
        "bin_s": fit.bin_s,
        "profile": fit.profile.tolist(),
        "weekday": None if fit.weekday is None else fit.weekday.tolist(),
    }
    hours = ((t % 86_400.0) // 3600.0).astype(np.int64)
    counts = np.bincount(hours, minlength=HOURS)
    if counts.min() < MIN_PER_HOUR:
        model.update(_quantiles(resid, TAIL))
        return model
    # Robust scale per hour of day (MAD), times the tail quantiles of the residuals standardised by it:
    # a few anomalies in one hour's ~170 training points cannot stretch that hour's band, as they
    # would if each hour had its own 0.5 % quantile.
    centre = grouped_quantile(hours, resid, 0.5, HOURS)
    sigma = MAD_TO_SIGMA * grouped_quantile(hours, np.abs(resid - centre[hours]), 0.5, HOURS)
    sigma = np.where(sigma > 0, sigma, max(robust_sigma(resid), model_floor(x)))
    z_lo, z_hi = np.quantile(resid / sigma[hours], [TAIL, 1 - TAIL])
    # An hour where the metric sits at its ceiling (a GPU at 100 %) has almost no spread, and its band would
    # shrink below the dips a saturated GPU still shows (a stall of its input reads 97 %): such an hour is
    # widened to a share of the typical hour's scale (after the tails above, so other hours keep theirs).
    sigma = np.maximum(sigma, HOUR_SCALE_FLOOR * float(np.median(sigma)))
    model["resid_lo"] = np.minimum(sigma * z_lo, 0.0).tolist()
    model["resid_hi"] = np.maximum(sigma * z_hi, 0.0).tolist()
    return model


def _fit_level_shift(t: np.ndarray, x: np.ndarray, step: float) -> dict:
    """Find level changes by repeatedly splitting the trailing segment of 1-hour block medians."""
    block = block_size(step)
    bt, bm, _ = block_medians(t, x, block)
    cuts = []  # block-median indices where a new level starts
    start = 0
    for _ in range(MAX_SHIFTS):
        segment = bm[start:]
        if segment.size < 4:
            break
        ss = float(np.sum((segment - segment.mean()) ** 2))
        k, sse = best_split(segment)
        if ss <= 0 or 1 - sse / ss < SPLIT_R2:
            break
        start += k
        cuts.append(start)
    finite = np.isfinite(x)
    tf, xf = t[finite], x[finite]
    edges = [bt[c] - block * step / 2 for c in cuts]  # block centre → block start
    segment_of = np.searchsorted(np.asarray(edges), tf, side="right")
    levels = np.array([np.median(xf[segment_of == s]) if np.any(segment_of == s) else np.nan for s in range(len(cuts) + 1)])
    resid = xf - levels[segment_of]
    model = {"level": float(levels[-1]) if np.isfinite(levels[-1]) else float(np.median(xf)), "since": float(edges[-1]) if edges else float(tf[0])}
    model.update(_quantiles(resid[np.isfinite(resid)], TAIL))
    return model
