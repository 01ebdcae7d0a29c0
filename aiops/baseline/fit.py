"""Fitting one series: classify, fit the class model, measure how much of the training data it covers."""

from __future__ import annotations

import numpy as np

from vigil.aiops.baseline.classify import classify
from vigil.aiops.baseline.models import band, fit_model
from vigil.aiops.history.series import Series

# Fewer finite points than this and a series is skipped (reported, not modelled).
MIN_FIT_POINTS = 12


class NotEnoughData(ValueError):
    """The series has too few finite points to learn a baseline from."""


def fit_series(series: Series, step: float, sensitivity: float = 1.0) -> dict:
    """Model-store entry for a series already on its regular grid (see `aiops.history.clean.prepare`)."""
    t, x = series.timestamps, series.values
    finite = np.isfinite(x)
    n = int(finite.sum())
    if n < MIN_FIT_POINTS:
        raise NotEnoughData(f"{series.describe()}: {n} usable points, need at least {MIN_FIT_POINTS}")
    verdict = classify(t, x, step)
    model = fit_model(verdict.kind, t, x, step)
    # coverage is measured where the model claims to hold: for a level-shifting series, the current level
    judged = finite & (t >= model["since"]) if verdict.kind == "level_shift" else finite
    _, lower, upper = band(model, t[judged], sensitivity)
    inside = float(np.mean((x[judged] >= lower) & (x[judged] <= upper)))
    return {
        "metric": series.name,
        "labels": dict(sorted(series.labels.items())),
        "counter_rate": series.is_counter,
        "class": verdict.kind,
        "evidence": verdict.evidence,
        "model": model,
        "points": n,
        "start": float(t[finite][0]),
        "end": float(t[finite][-1]),
        "training_in_band": inside,
    }
