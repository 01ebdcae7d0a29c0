"""SPOT thresholds (aiops/detect/evt.py): on samples with a known tail, the threshold at risk q is close
to the true (1 - q) quantile; anomalies are not learned; a flat calibration still gives a threshold."""

import math

import numpy as np
import pytest

from vigil.aiops.detect.evt import Spot, fit_gpd, gpd_quantile


@pytest.mark.parametrize("q", [1e-3, 1e-4])
def test_threshold_on_an_exponential_tail_is_its_true_quantile(q):
    rng = np.random.default_rng(11)
    spot = Spot(q)
    spot.fit(rng.exponential(2.0, 50_000))
    true = -2.0 * math.log(q)  # P(X > x) = exp(-x / 2)
    assert spot.threshold == pytest.approx(true, rel=0.1)


@pytest.mark.parametrize("q", [1e-3, 1e-4])
def test_threshold_on_a_pareto_tail_is_its_true_quantile(q):
    rng = np.random.default_rng(12)
    spot = Spot(q)
    spot.fit(rng.pareto(4.0, 50_000) + 1.0)  # P(X > x) = x ** -4 for x >= 1
    assert spot.threshold == pytest.approx(q ** -0.25, rel=0.12)


def test_streaming_keeps_the_threshold_near_the_true_quantile():
    rng = np.random.default_rng(13)
    data = rng.exponential(1.0, 60_000)
    spot = Spot(1e-3)
    spot.fit(data[:3000])
    flagged = sum(spot.update(x) for x in data[3000:])
    assert spot.threshold == pytest.approx(-math.log(1e-3), rel=0.12)
    assert flagged < 3 * 1e-3 * 57_000  # about q of the normal points, not a flood


def test_gpd_fit_recovers_a_known_shape():
    rng = np.random.default_rng(14)
    xi, sigma = 0.2, 3.0
    u = rng.uniform(size=40_000)
    excesses = sigma / xi * ((1 - u) ** -xi - 1)  # the GPD's inverse CDF
    s, x = fit_gpd(excesses)
    assert x == pytest.approx(xi, abs=0.03)
    assert s == pytest.approx(sigma, rel=0.05)
    # and the quantile formula inverts the CDF: P(X > z) = q for q below the fitted level
    z = gpd_quantile(0.0, sigma, xi, 1e-4, 1000, 1000)
    assert (1 + xi * z / sigma) ** (-1 / xi) == pytest.approx(1e-4)


def test_a_sustained_anomaly_is_flagged_throughout_and_barely_moves_the_threshold():
    rng = np.random.default_rng(15)
    spot = Spot(1e-3)
    spot.fit(rng.standard_normal(5000))
    before = spot.threshold
    assert all(spot.update(before * 10) for _ in range(100))  # learned censored, at the threshold
    assert before < spot.threshold < before * 1.3
    learner = Spot(1e-3)
    learner.fit(rng.standard_normal(5000))
    assert learner.exceeds(before * 10)
    assert learner.threshold == pytest.approx(before, rel=0.1)  # exceeds() learns nothing


def test_a_flat_calibration_flags_any_departure():
    spot = Spot(1e-4)
    spot.fit(np.full(1000, 5.0))
    assert not spot.update(5.0)
    assert spot.update(5.1)


def test_risk_must_be_rarer_than_the_initial_level():
    with pytest.raises(ValueError, match="risk q"):
        Spot(0.05, level=0.98)
