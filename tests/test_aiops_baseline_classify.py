"""Each documented class rule classifies synthetic series of that class right, and only those."""

from __future__ import annotations

import numpy as np
import pytest

from vigil.aiops.baseline import synthetic
from vigil.aiops.baseline.classify import CLASSES, classify
from vigil.exporters.sim.load import gpu_load

STEP = 300.0


@pytest.mark.parametrize("kind", sorted(synthetic.GENERATORS))
@pytest.mark.parametrize("seed", range(6))
def test_synthetic_series_of_each_class_are_classified_right(kind, seed):
    t = synthetic.grid()
    x = synthetic.GENERATORS[kind](t, np.random.default_rng(seed))
    verdict = classify(t, x, STEP)
    assert verdict.kind == kind, verdict.evidence


def test_classes_are_the_documented_five():
    assert set(CLASSES) == set(synthetic.GENERATORS)


def test_simulated_gpu_load_is_periodic_with_weekly_offsets():
    t = synthetic.grid()
    x = np.array([gpu_load("node-3", 5, s) for s in t])
    verdict = classify(t, x, STEP)
    assert verdict.kind == "periodic"
    assert verdict.evidence["weekly"] == 1.0


def test_daily_cycle_needs_two_days_of_history():
    t = synthetic.grid(days=1.5)
    x = synthetic.periodic(t, np.random.default_rng(0))
    assert classify(t, x, STEP).kind != "periodic"


def test_constant_and_too_short_series_are_stable():
    t = synthetic.grid(days=1)
    assert classify(t, np.full(t.size, 7.0), STEP).kind == "stable"
    assert classify(t[:10], np.arange(10.0), STEP).kind == "stable"


def test_gaps_do_not_change_the_class():
    t = synthetic.grid()
    x = synthetic.trending(t, np.random.default_rng(3))
    x[1000:1600] = np.nan  # two days missing
    x[::7] = np.nan
    assert classify(t, x, STEP).kind == "trending"


def test_rare_large_spikes_on_a_noisy_level_are_spiky():
    rng = np.random.default_rng(5)
    t = synthetic.grid()
    x = 10 + rng.normal(0, 0.2, t.size)
    x[rng.choice(t.size, 60, replace=False)] += 20  # 1.5 % of points
    verdict = classify(t, x, STEP)
    assert verdict.kind == "spiky" and verdict.evidence["spike_share"] >= 0.01


@pytest.mark.parametrize("step", [60.0, 3600.0])
@pytest.mark.parametrize("kind", sorted(synthetic.GENERATORS))
def test_rules_hold_at_other_grid_steps(kind, step):
    t = synthetic.grid(step=step)
    x = synthetic.GENERATORS[kind](t, np.random.default_rng(0))
    assert classify(t, x, step).kind == kind
