"""GPU risk weights chosen for detection at the operating false-alarm rate, before they are scaled.

A logistic regression fitted by log loss ranks GPU-days by their probability of a failure within the
horizon. The alarm rule asks something else: a GPU counts as detected when any one of its days in the
horizon crosses the threshold that 0.1 % of healthy GPU-days cross. On the simulated population
(seed 0, 90 days, 2,048 nodes) the log-loss weights detected 31 % of the held-out failing GPUs there,
and the hand-set weights 42 % (the ceiling, GPUs with any precursor, is 45 %): log loss weighs every
labelled GPU-day alike, while the alarm counts a GPU once, when any of its days crosses a threshold
set at the top 0.1 % of healthy days, so the two orders can differ where it matters.

So the *direction* of the weights (their ratios) is searched for detection at the operating point on
the training half, starting from the log-loss fit: a seeded multiplicative random search that takes
only steps that detect more (the objective is a step function of the weights). Taking steps that keep
the detection too, to wander along its plateaus, detected no more on the held-out half and left weights
that differed wildly between seeds (a temperature weight of 0.02 on one); taking only gains keeps them
near the log-loss fit and alike across seeds. The caller then fits a scale and a bias by log loss on the one
score `features @ direction` (Platt scaling), which keeps the ranking and makes the risk a probability
again. Deterministic for a seed.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from vigil.aiops.disk.model import threshold_for_far

SEARCH_STEPS = 600
STEP_SPREAD = 0.3  # the log-normal spread of each weight's change in one step


class DetectionObjective:
    """The share of the training half's failing units detected at `false_alarm_rate` by weights `w`."""

    def __init__(self, features: np.ndarray, unit: np.ndarray, days_to_failure: np.ndarray, rows: np.ndarray,
                 horizon: int, false_alarm_rate: float):
        unit = pd.factorize(unit, sort=True)[0]
        healthy = np.isnan(days_to_failure)
        window = rows & ~healthy & (days_to_failure >= 1) & (days_to_failure <= horizon)
        self._healthy = features[rows & healthy]
        self._window, self._window_unit = features[window], unit[window]
        self._failing = len(np.unique(unit[rows & ~healthy]))
        self._far = false_alarm_rate

    def __call__(self, w: np.ndarray) -> float:
        if self._failing == 0:
            return 0.0
        threshold = threshold_for_far(self._healthy @ w, self._far)
        return len(np.unique(self._window_unit[self._window @ w > threshold])) / self._failing


def search_direction(objective: DetectionObjective, start: np.ndarray, seed: int,
                     steps: int = SEARCH_STEPS) -> tuple[np.ndarray, float]:
    """(non-negative weights, their detection on the training half), from `start` (the log-loss fit)."""
    rng = np.random.default_rng(seed + 29)
    start = np.asarray(start, dtype=float)
    best = np.maximum(start, 1e-3 * max(float(start.max()), 1e-9))  # a weight at 0 could never grow
    best_score = objective(best)
    for _ in range(steps):
        candidate = best * np.exp(rng.normal(0.0, STEP_SPREAD, size=best.size))
        score = objective(candidate)
        if score > best_score:
            best, best_score = candidate, score
    return best, best_score
