"""Counter resets, gaps and irregular sampling are handled before any model sees the data."""

from __future__ import annotations

import numpy as np
import pytest

from vigil.aiops.history.clean import counter_rate, prepare, regularize
from vigil.aiops.history.series import Series, looks_like_counter


def test_counter_rate_treats_a_drop_as_a_restart_from_zero():
    t = np.array([0, 60, 120, 180, 240], dtype=float)
    v = np.array([100, 160, 220, 30, 90], dtype=float)  # restarted between 120 and 180
    rt, rate = counter_rate(t, v)
    assert rt.tolist() == [60, 120, 180, 240]
    assert rate.tolist() == [1.0, 1.0, 0.5, 1.0]  # 30 counted since the restart, never negative


def test_counter_rate_skips_missing_samples_and_short_input():
    rt, rate = counter_rate(np.array([0.0, 10, 20]), np.array([0.0, np.nan, 40]))
    assert rt.tolist() == [20.0] and rate.tolist() == [2.0]
    assert counter_rate(np.array([0.0]), np.array([1.0]))[0].size == 0


def test_regularize_interpolates_irregular_samples_onto_the_grid():
    t = np.array([1, 58, 125, 181, 243], dtype=float)
    v = 2.0 * t
    grid, out = regularize(t, v, step=60, max_gap=120)
    assert grid.tolist() == [60, 120, 180, 240]
    np.testing.assert_allclose(out, 2.0 * grid)


def test_long_gaps_stay_gaps_short_ones_are_bridged():
    t = np.concatenate((np.arange(0, 600, 60.0), np.arange(1500, 1800, 60.0)))  # 900 s hole
    v = np.ones(t.size)
    _, bridged = regularize(t, v, step=60, max_gap=1000)
    assert np.isfinite(bridged).all()
    grid, out = regularize(t, v, step=60, max_gap=300)
    hole = (grid > 540) & (grid < 1500)
    assert np.isnan(out[hole]).all() and hole.sum() == 15
    assert np.isfinite(out[~hole]).all()


def test_regularize_sorts_and_ignores_nan():
    grid, out = regularize(np.array([120.0, 0, 60, 90]), np.array([3.0, 1, np.nan, 2.5]), 60, 120)
    assert grid.tolist() == [0, 60, 120]
    np.testing.assert_allclose(out, [1.0, 2.0, 3.0])


def test_prepare_turns_counters_into_rates_on_the_grid():
    t = np.arange(0, 3600, 15.0)
    v = (np.arange(t.size) % 100) * 30.0 + 30  # +30 every 15 s, restarts every 100 samples
    series = Series("vigil_xid_errors_total", {"node": "a"}, t, v, is_counter=looks_like_counter("vigil_xid_errors_total"))
    ready = prepare(series, step=60, max_gap=120)
    assert ready.is_counter and ready.labels == {"node": "a"}
    np.testing.assert_allclose(ready.values, 2.0)
