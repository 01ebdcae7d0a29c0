"""The evt detector: causal, dense labels over a whole anomalous stretch, per-class handling, missing
data, the sensitivity -> risk mapping, the warm-up, and a permanent change accepted after a while."""

import numpy as np
import pytest

from vigil.aiops.detect.evt_detector import EvtDetector, EvtParameters, risk_from_sensitivity
from vigil.aiops.kpi_synth.generate import make_series


def minutes(n):
    base = np.datetime64("2024-01-01T00:00:00")
    return [str(base + np.timedelta64(i, "m")).replace("T", " ") for i in range(n)]


def noisy(n, seed=0):
    return 100.0 + np.random.default_rng(seed).normal(0.0, 2.0, n)


def test_scores_of_a_prefix_do_not_change_when_the_series_is_extended():
    s = make_series("periodic", "level_shift", 0)  # periodic: the daily profile is refitted on the way
    stamps = s.timestamps()
    short = EvtDetector().score_series(stamps[:6500], s.values[:6500])
    detector = EvtDetector()
    long = detector.score_series(stamps[:9000], s.values[:9000])
    assert detector.kind == "periodic"
    np.testing.assert_array_equal(short, long[:6500])
    assert long[6500:].max() > 0.5  # the extension holds an anomaly, and it is seen


def test_a_level_shift_is_labelled_for_as_long_as_it_lasts():
    values = noisy(6000)
    values[4500:4700] += 12.0  # 6 sigma for 200 minutes
    detector = EvtDetector()
    flags = detector.score_series(minutes(6000), values) > 0.5
    assert detector.kind == "stable"
    assert flags[4500:4507].any()  # found within the 7-point delay
    assert flags[4500:4700].mean() > 0.9  # dense: the whole stretch, not one alarm
    quiet = np.r_[flags[3600:4500], flags[4720:]]
    assert quiet.mean() < 0.005


def test_a_missing_value_is_flagged_and_explained():
    values = noisy(4000)
    values[3800:3810] = np.nan
    detector = EvtDetector()
    stamps = minutes(4000)
    for i, (stamp, value) in enumerate(zip(stamps, values)):
        score = detector.update(stamp, float(value))
        if 3800 <= i < 3810:
            assert score == 1.0 and detector.explain().startswith("missing")
    assert detector.explain() == ""


def test_a_flag_is_explained_with_its_signal_threshold_and_risk():
    values = noisy(4000)
    values[3900] += 40.0
    detector = EvtDetector()
    stamps = minutes(4000)
    for stamp, value in zip(stamps[:3901], values[:3901]):
        score = detector.update(stamp, float(value))
    assert score > 0.5
    why = detector.explain()
    assert why.startswith("spike:") and "> threshold" in why and "risk 0.0001" in why and "stable curve" in why


def test_sensitivity_maps_onto_the_risk_and_more_sensitive_flags_more():
    assert risk_from_sensitivity(0.0) == pytest.approx(1e-6)
    assert risk_from_sensitivity(0.5) == pytest.approx(1e-4)
    assert risk_from_sensitivity(1.0) == pytest.approx(1e-2)
    with pytest.raises(ValueError, match="sensitivity"):
        risk_from_sensitivity(1.5)
    s = make_series("unstable", "variance", 0)
    stamps = s.timestamps()[:8000]
    counts = [int(np.sum(EvtDetector.create(sensitivity=x).score_series(stamps, s.values[:8000]) > 0.5))
              for x in (0.2, 0.5, 0.8)]
    assert counts[0] < counts[1] < counts[2]


def test_the_warmup_scores_nothing_and_can_be_set_in_points():
    values = noisy(1000)
    values[100] += 50.0
    default = EvtDetector().score_series(minutes(1000), values)
    assert default.max() == 0.0  # 1000 minutes are all warm-up (2.5 days by default)
    short = EvtDetector.create(warmup=60).score_series(minutes(1000), values)
    assert short[:60].max() == 0.0 and short[100] > 0.5
    with pytest.raises(ValueError, match="warm-up of more than 20"):
        EvtDetector.create(warmup=20)


def test_a_permanent_change_becomes_the_new_normal_after_max_hold():
    values = noisy(8000)
    values[4000:] += 20.0
    params = EvtParameters(max_hold_s=3600.0)  # an hour
    flags = EvtDetector(params).score_series(minutes(8000), values) > 0.5
    assert flags[4000:4060].all()
    assert flags[4200:].mean() < 0.01


def test_alarm_mode_raises_one_alarm_where_the_dense_labels_start():
    from vigil.aiops.detect import make_detector

    values = noisy(6000)
    values[4500:4700] += 12.0
    dense = make_detector("evt").score_series(minutes(6000), values) > 0.5
    alarms = make_detector("evt-alarms").score_series(minutes(6000), values) > 0.5
    first = 4500 + int(np.argmax(dense[4500:]))
    assert alarms[4500:4700].sum() == 1 and alarms[first]
    assert alarms.sum() <= dense.sum() and set(np.flatnonzero(alarms)) <= set(np.flatnonzero(dense))


def test_a_traffic_profile_refitted_over_dead_days_does_not_divide_by_zero():
    # a positive daily curve (its profile scales) goes dead for 6 days: a daily refit over those days
    # once held 0 at some times of day, and `vigil aiops detect --detector evt` stopped with
    # ZeroDivisionError (AIOps-2018 KPI da403e4e)
    from datetime import datetime, timedelta

    i = np.arange(288 * 16)
    values = 100 + 50 * np.sin(2 * np.pi * i / 288) + np.random.default_rng(1).normal(0, 2, i.size)
    values[288 * 4:288 * 10] = 0.0
    stamps = [f"{datetime(2024, 3, 1) + timedelta(minutes=5 * int(k)):%Y-%m-%d %H:%M:%S}" for k in i]
    detector = EvtDetector()
    scores = detector.score_series(stamps, values)
    assert detector.kind == "periodic" and np.isfinite(scores).all()
    assert scores[288 * 4:288 * 4 + 7].max() > 0.5  # the curve going dead is flagged
