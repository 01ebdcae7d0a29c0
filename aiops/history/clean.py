"""Cleaning raw samples: counter rates across resets, regular grids with bounded interpolation."""

from __future__ import annotations

import numpy as np

from vigil.aiops.history.series import Series


def counter_rate(timestamps: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-second rate of a counter between consecutive samples, treating any drop as a reset.

    As Prometheus' `rate()` does, a decrease means the counter restarted from zero, so the increase
    over that interval is the new value itself. The rate is stamped at the later sample of each pair.
    """
    t = np.asarray(timestamps, dtype=np.float64)
    v = np.asarray(values, dtype=np.float64)
    ok = np.isfinite(v)
    t, v = t[ok], v[ok]
    if t.size < 2:
        return np.empty(0), np.empty(0)
    increase = np.diff(v)
    resets = increase < 0
    increase[resets] = v[1:][resets]
    dt = np.diff(t)
    return t[1:], increase / dt


def regularize(
    timestamps: np.ndarray, values: np.ndarray, step: float, max_gap: float
) -> tuple[np.ndarray, np.ndarray]:
    """Resample onto a grid of multiples of `step` seconds.

    A grid point takes the linear interpolation of the samples on either side when they are at most
    `max_gap` seconds apart (a sample on the grid point is taken as is); wider gaps stay NaN, so a
    model never learns from invented data.
    """
    if step <= 0:
        raise ValueError("step must be positive")
    t = np.asarray(timestamps, dtype=np.float64)
    v = np.asarray(values, dtype=np.float64)
    ok = np.isfinite(t) & np.isfinite(v)
    t, v = t[ok], v[ok]
    if t.size == 0:
        return np.empty(0), np.empty(0)
    order = np.argsort(t, kind="stable")
    t, v = t[order], v[order]
    first = np.ceil(t[0] / step) * step
    last = np.floor(t[-1] / step) * step
    if last < first:
        return np.empty(0), np.empty(0)
    grid = first + step * np.arange(int(round((last - first) / step)) + 1)
    right = np.searchsorted(t, grid, side="left")  # first sample at or after the grid point
    right = np.minimum(right, t.size - 1)
    left = np.maximum(right - 1, 0)
    exact = t[right] == grid
    t_l, t_r = t[left], t[right]
    span = t_r - t_l
    with np.errstate(invalid="ignore", divide="ignore"):
        frac = np.where(span > 0, (grid - t_l) / span, 0.0)
    out = v[left] + frac * (v[right] - v[left])
    out = np.where((span <= max_gap) & (t_l <= grid) & (grid <= t_r), out, np.nan)
    out[exact] = v[right][exact]
    return grid, out


def prepare(series: Series, step: float, max_gap: float) -> Series:
    """The series as a model wants it: counters turned into rates, then put on the regular grid."""
    t, v = series.timestamps, series.values
    if series.is_counter:
        t, v = counter_rate(t, v)
    grid, vals = regularize(t, v, step, max_gap)
    return Series(series.name, dict(series.labels), grid, vals, is_counter=series.is_counter)
