"""Behaviour of vigil's detector that a user relies on: records, suppression, time-based memory."""

from dataclasses import replace

import numpy as np

from vigil.aiops.detect import default_threshold, make_detector
from vigil.aiops.detect.vigil_detector import VigilDetector, VigilParameters


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
    assert scores[:200].max() == 0.0


def weekly_series(weeks, seed=0):
    """Half-hourly load with a daily cycle and a weekly six-hour job burst (Mondays 06:00-12:00)."""
    n = weeks * 7 * 48
    t = np.arange(n)
    values = 50 + 20 * np.sin(2 * np.pi * t / 48) + np.random.default_rng(seed).normal(0, 1, n)
    monday_burst = ((t // 48) % 7 == 0) & (t % 48 >= 12) & (t % 48 < 24)
    values[monday_burst] += 20
    return stamps(n, 30), values


def test_weekly_rhythm_is_context_not_an_anomaly_but_a_stall_is():
    times, values = weekly_series(6)
    threshold = default_threshold("vigil")
    scores = make_detector("vigil").score_series(times, values)
    two_weeks = 2 * 7 * 48
    # once a week of history exists, the Monday burst matches last Monday: no alarms (compared with
    # yesterday only, each burst would alarm)
    assert not np.any(scores[two_weeks:] >= threshold)
    stalled = values.copy()
    start = 4 * 7 * 48 + 2 * 48 + 10  # a Wednesday in week 5: the load freezes for half a day
    stalled[start:start + 24] = stalled[start]
    alarms = np.flatnonzero(make_detector("vigil").score_series(times, stalled) >= threshold)
    assert np.any((alarms >= start) & (alarms < start + 24))
    assert not np.any((alarms >= two_weeks) & (alarms < start))


def _after_a_noisy_stretch(seed=2):
    """Noise with a 200-point burst four times as wide: the burst's spikes stay the records, and it widens
    the baseline, so a later value a little beyond everything seen is no spike record."""
    values = noisy(3000, seed)
    values[1000:1200] = 100 + np.random.default_rng(seed + 100).normal(0, 4, 200)
    return values


def test_a_new_high_or_low_beyond_every_earlier_value_alarms_as_a_breakout():
    threshold = default_threshold("vigil")
    without = replace(VigilParameters(), breakout_tolerance=0.0)
    for side in (1, -1):
        values = _after_a_noisy_stretch()
        low, high = values[:2600].min(), values[:2600].max()
        values[2600] = high + 0.1 * (high - low) if side > 0 else low - 0.1 * (high - low)
        detector = VigilDetector()
        detector.explaining = True
        for i, (stamp, value) in enumerate(zip(stamps(3000, 5), values)):
            score = detector.update(stamp, float(value))
            if i == 2600:
                assert score >= threshold, side
                assert detector.explain().startswith("breakout (a new high or low beyond every earlier value of the last 69 days): "
                                                     "10.0% of the earlier range beyond it, 2.00x the recent record 5.0%"), \
                    detector.explain()
        # the other tests alone miss it: the burst's spikes are still the records
        assert VigilDetector(without).score_series(stamps(3000, 5), values)[2600] < threshold, side


def test_the_breakout_range_forgets_a_glitch_older_than_its_window():
    """An early glitch far above everything must not hide, months later, a new high of the recent range:
    the range covers the last 20,000 points at 5 minutes (69 days), 1,666 at hourly sampling."""
    threshold = default_threshold("vigil")
    all_time = replace(VigilParameters(), breakout_window=0)
    for step_minutes, length in ((5, 24000), (60, 5000)):
        values = noisy(length, seed=2)
        scale = min(1.0, 5 / step_minutes)  # memories are spans of time
        burst = length - 400 - int(1600 * scale)  # as in _after_a_noisy_stretch: its spikes stay the records
        values[burst:burst + 200] = 100 + np.random.default_rng(102).normal(0, 4, 200)
        values[300] = 160.0  # a glitch, 60 std above, long before the window
        window = int(20000 * scale)  # 69 days of points
        recent = values[length - 400 - window:length - 400]
        values[length - 400] = recent.max() + 0.07 * (recent.max() - recent.min())
        assert values[length - 400] < 160.0
        detector = VigilDetector()
        detector.explaining = True
        for i, (stamp, value) in enumerate(zip(stamps(length, step_minutes), values)):
            score = detector.update(stamp, float(value))
            if i == length - 400:
                assert score >= threshold, step_minutes
                assert detector.explain().startswith("breakout (a new high or low beyond every earlier value of the "
                                                     "last 69 days)"), detector.explain()
        # a range over every value so far still holds the glitch: nothing else alarms there
        assert VigilDetector(all_time).score_series(stamps(length, step_minutes), values)[length - 400] < threshold


def test_a_new_high_within_the_tolerance_is_no_breakout():
    values = _after_a_noisy_stretch()
    low, high = values[:2600].min(), values[:2600].max()
    values[2600] = high + 0.03 * (high - low)  # beyond the range, by less than its 5 % tolerance
    scores = VigilDetector().score_series(stamps(3000, 5), values)
    assert scores[2600] < default_threshold("vigil")


def test_the_first_move_of_a_flat_series_is_explained_without_a_share_of_no_range():
    values = np.full(400, 5.0)
    values[350] = 6.0
    detector = VigilDetector()
    detector.explaining = True
    for i, (stamp, value) in enumerate(zip(stamps(400, 5), values)):
        score = detector.update(stamp, float(value))
        if i == 350:
            assert score >= default_threshold("vigil")
            assert detector.explain().startswith("breakout (a new high or low beyond every earlier value of the last 69 days): "
                                                 "the first move of a series flat until now"), detector.explain()


def test_a_short_warmup_does_not_let_the_first_values_break_out_of_a_range_of_a_few():
    """With --warmup 30 every test stays silent until it has 100 points to judge by, the breakout test
    included: the 31st value of plain noise is often beyond the first 30's narrow range."""
    threshold = default_threshold("vigil")
    early = []
    for seed in range(20):
        scores = VigilDetector.create(warmup=30).score_series(stamps(300, 5), noisy(300, seed))
        early += [(seed, i) for i in np.flatnonzero(scores[:100] >= threshold)]
    assert early == []
