"""Behaviour of vigil's detector that a user relies on: records, suppression, time-based memory."""

import numpy as np

from aiops.detect import default_threshold, make_detector


def stamps(n, step_minutes):
    base = np.datetime64("2024-05-01T00:00")
    return [str(base + np.timedelta64(i * step_minutes, "m")).replace("T", " ") for i in range(n)]


def noisy(n, seed=0):
    return 100 + np.random.default_rng(seed).normal(0, 1, n)


def test_equal_second_spike_is_suppressed_by_the_recent_record_at_5_minutes():
    values = noisy(1500)
    values[[800, 1000]] += 15  # two equal spikes 200 points (16.7 h) apart
    scores = make_detector("vigil").score_series(stamps(1500, 5), values)
    threshold = default_threshold("vigil")
    assert scores[800] >= threshold
    assert scores[1000] < threshold  # the first spike is still within memory: no new record
    alarms = np.flatnonzero(scores >= threshold)
    assert 800 in alarms and not np.any((alarms > 800) & (alarms <= 1100))


def test_memory_is_a_span_of_time_so_hourly_series_forget_sooner():
    values = noisy(1500)
    values[[800, 1000]] += 15  # 200 hours apart: beyond the 3.5 days an hourly series remembers
    scores = make_detector("vigil").score_series(stamps(1500, 60), values)
    threshold = default_threshold("vigil")
    assert scores[800] >= threshold and scores[1000] >= threshold


def test_level_shift_alarms_once_even_right_after_a_marginal_alarm():
    values = noisy(2000, seed=4)  # this noise alarms marginally at row 1102 (a 4-sigma point)
    values[1200:] += 8  # a level shift 98 rows later, inside the quiet period of that alarm
    scores = make_detector("vigil").score_series(stamps(2000, 5), values)
    alarms = np.flatnonzero(scores >= default_threshold("vigil"))
    assert 1102 in alarms
    # the shift still alarms (clearly stronger than the recent record), and only once: the shifted
    # points after it are one episode
    assert [a for a in alarms if 1150 <= a < 1500] == [1200]


def test_quiet_period_damps_repeats_of_similar_strength():
    values = noisy(2000, seed=2)
    # three spikes within 100 points, each a little higher: each is a new record, but not 1.5 times one
    values[[1000, 1050, 1100]] += [12, 13, 14]
    scores = make_detector("vigil").score_series(stamps(2000, 5), values)
    threshold = default_threshold("vigil")
    assert scores[1000] >= threshold
    assert scores[1050] < threshold and scores[1100] < threshold


def test_warmup_scores_zero():
    values = noisy(400)
    values[100] += 50
    scores = make_detector("vigil").score_series(stamps(400, 5), values)
    assert scores[:300].max() == 0.0
