"""The synthetic KPI benchmark: deterministic series, labels of the documented shapes, and the two
scores (point-adjusted with the 7-point delay rule, strict point-wise) on cases worked out by hand."""

import numpy as np
import pytest

from vigil.aiops.kpi_synth import (
    ANOMALY_KINDS, CURVE_CLASSES, Counts, make_benchmark, point_adjusted_counts, segments, strict_counts,
)
from vigil.aiops.kpi_synth.generate import CLEAN_DAYS, DAY, LENGTHS, make_series


def test_the_same_seed_gives_the_same_series_and_another_seed_does_not():
    a, b = make_series("periodic", "missing", 3), make_series("periodic", "missing", 3)
    np.testing.assert_array_equal(a.values, b.values)  # NaN compare equal here
    np.testing.assert_array_equal(a.labels, b.labels)
    c = make_series("periodic", "missing", 4)
    assert len(c) != len(a) or not np.array_equal(c.values, a.values, equal_nan=True)


def test_halves_split_by_seed_and_cover_every_curve_and_kind():
    tune, heldout = make_benchmark("tune"), make_benchmark("heldout")
    for half in (tune, heldout):
        assert {(s.curve, s.kind) for s in half} == {(c, k) for c in CURVE_CLASSES for k in ANOMALY_KINDS}
    assert {s.seed for s in tune}.isdisjoint({s.seed for s in heldout})
    assert sorted(s.name for s in make_benchmark()) == sorted(s.name for s in tune + heldout)
    with pytest.raises(ValueError, match="unknown half"):
        make_benchmark("train")


@pytest.mark.parametrize("kind", ANOMALY_KINDS)
def test_labels_have_the_documented_shape(kind):
    for curve in CURVE_CLASSES:
        s = make_series(curve, kind, 0)
        assert 7 * DAY <= len(s) <= 14 * DAY
        assert s.labels.dtype == bool and s.labels.shape == s.values.shape
        spans = segments(s.labels)
        assert 3 <= len(spans) <= 7
        assert spans[0][0] >= CLEAN_DAYS * DAY  # the warm-up stays clean
        lo, hi = LENGTHS[kind]
        for a, b in spans:
            assert b - a <= hi and (b - a >= lo or kind == "trend")  # a ramp's label starts once it shows
        if kind == "missing":
            np.testing.assert_array_equal(np.isnan(s.values), s.labels)
        else:
            assert np.isfinite(s.values).all()
        assert s.timestamps()[:2] == ["2024-01-01 00:00:00", "2024-01-01 00:01:00"]


def test_an_injected_anomaly_moves_the_values_inside_its_segment():
    s = make_series("stable", "level_shift", 1)
    outside = s.values[~s.labels][CLEAN_DAYS * DAY:]
    sigma = np.std(np.diff(outside)) / np.sqrt(2)
    for a, b in segments(s.labels):
        assert abs(np.mean(s.values[a:b]) - np.median(outside)) > 3 * sigma


# labels:  segment A = rows 1..9 (9 points), segment B = rows 12..13 (2 points)
LABELS = np.array([0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 1, 1, 0], dtype=bool)


def flags_at(*rows):
    flags = np.zeros(LABELS.size, dtype=bool)
    flags[list(rows)] = True
    return flags


def test_point_adjust_credits_a_whole_segment_flagged_within_its_first_seven_points():
    flags = flags_at(7, 13, 11)  # row 7 is A's 7th point, row 13 B's 2nd, row 11 outside
    adjusted = point_adjusted_counts(flags, LABELS)
    assert adjusted == Counts(tp=11, fp=1, fn=0)
    assert adjusted.precision == pytest.approx(11 / 12) and adjusted.recall == 1.0
    assert adjusted.f1 == pytest.approx(2 * (11 / 12) / (11 / 12 + 1))
    strict = strict_counts(flags, LABELS)
    assert strict == Counts(tp=2, fp=1, fn=9)
    assert strict.f1 == pytest.approx(2 * (2 / 3) * (2 / 11) / (2 / 3 + 2 / 11))


def test_point_adjust_misses_a_segment_first_flagged_after_seven_points():
    flags = flags_at(8, 9)  # A's 8th and 9th points: too late
    assert point_adjusted_counts(flags, LABELS) == Counts(tp=0, fp=0, fn=11)
    assert strict_counts(flags, LABELS) == Counts(tp=2, fp=0, fn=9)
    assert point_adjusted_counts(flags, LABELS, delay=8) == Counts(tp=9, fp=0, fn=2)


def test_scores_add_up_over_series_and_reject_mismatched_lengths():
    total = point_adjusted_counts(flags_at(1), LABELS) + point_adjusted_counts(flags_at(0), LABELS)
    assert total == Counts(tp=9, fp=1, fn=2 + 11)
    assert Counts().f1 == 0.0
    with pytest.raises(ValueError, match="flags for"):
        strict_counts(np.zeros(3, dtype=bool), LABELS)
    assert segments(np.array([1, 1, 0, 1], dtype=bool)) == [(0, 2), (3, 4)]
