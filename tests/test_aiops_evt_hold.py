"""When the evt detector ends a flagged stretch early (aiops/detect/evt_hold.py), and how fast its
variance signal forgets.

A flagged point is not learned, so a held stretch keeps the level from before it. Two cases where that
level is stale end the stretch at once instead of after `max_hold_s` (6 hours): the stretch changed
sides (the normal moved while a shift was held), and the values came back to a level of the last hours
(the level had followed a ramp the flags missed). Each test also runs with the release switched off, to
show the hours-long false stretch it removes.
"""

import numpy as np

from vigil.aiops.detect.evt_detector import EvtDetector, EvtParameters
from vigil.aiops.detect.evt_hold import HeldStretch

N = 6000


def minutes(n):
    base = np.datetime64("2024-01-01T00:00:00")
    return [str(base + np.timedelta64(i, "m")).replace("T", " ") for i in range(n)]


def noisy(seed, n=N):
    return 100.0 + np.random.default_rng(seed).normal(0.0, 2.0, n)


def flags(values, **params):
    return EvtDetector(EvtParameters(**params)).score_series(minutes(values.size), values) > 0.5


def test_a_shift_that_ends_after_the_normal_moved_under_it_is_released_when_it_changes_sides():
    for seed in (0, 1, 2):
        values = noisy(seed)
        values[4500:4700] += 24.0  # a 12-sigma shift for 200 minutes ...
        values[4550:] -= np.clip((np.arange(4550, N) - 4550) / 50, 0, 1) * 10.0  # ... while the normal eases down 5 sigma
        released, held = flags(values), flags(values, flip_points=0)
        assert released[4500:4507].any() and released[4500:4700].all()  # the shift: found and labelled throughout
        assert released[4700:4760].sum() <= 16  # the new normal below the stale level: one side-change window
        assert not released[4760:5100].any()
        assert held[4700:4860].all()  # without the release: labelled until max_hold, 6 hours after the shift began


def test_the_return_from_a_ramp_the_level_followed_is_released_at_the_old_level():
    for seed in (0, 1, 2):
        values = noisy(seed)
        values[4200:4800] += np.linspace(0.0, 20.0, 600)  # a slow 10-sigma ramp the level follows, then
        # straight back to the old normal
        released, held = flags(values), flags(values, return_points=0)
        assert released[4800:4807].any()  # the drop is seen
        assert released[4800:4840].sum() <= 16  # then the level goes back to where it was an hour before
        assert not released[4840:5200].any()
        assert held[4840:5100].all()  # without it: the old normal is labelled as a shift for hours


def test_a_stretch_that_starts_on_the_wrong_side_is_not_taken_for_a_side_change():
    stretch = HeldStretch(flip_points=3, return_points=0, snapshots=12, snapshot_every=60, near=1.0, far=3.0)
    stretch.flagged(2.0, 100.0)  # a stray high point, then a dip that lasts
    for _ in range(8):
        stretch.flagged(-5.0, 90.0)
        assert stretch.release_level(100.0, 2.0) is None
    for _ in range(3):
        stretch.flagged(+1.5, 103.0)  # the dip ended and the values now sit above the held level
    assert stretch.release_level(100.0, 2.0) == 103.0


def test_a_return_needs_a_level_of_the_last_hours_far_from_the_held_one():
    stretch = HeldStretch(flip_points=0, return_points=3, snapshots=2, snapshot_every=2, near=1.0, far=3.0)
    for level in (100.0, 100.0, 110.0, 110.0, 120.0, 120.0):
        stretch.learned(level)  # snapshots every 2nd point, the last 2 kept: 110 and 120
    for value in (101.0, 100.5, 100.0, 100.2):
        stretch.flagged(-9.0, value)
    assert stretch.release_level(120.0, 2.0) is None  # 100 was learned too long ago
    for _ in range(4):
        stretch.flagged(-4.0, 110.5)
    assert stretch.release_level(120.0, 2.0) == 110.0
    assert stretch.release_level(111.0, 2.0) is None  # the held level is that level: nothing to return to
    stretch.forget_levels()  # a profile refit: earlier levels are on another scale
    assert stretch.release_level(120.0, 2.0) is None


def test_the_variance_signal_forgets_a_shift_within_a_few_points_and_keeps_a_4_sigma_shift_labelled():
    spans = [(4500, 4700), (5600, 5720), (6800, 7100), (8000, 8090)]
    after, found_in_time, labelled = 0, 0, []
    for seed in range(6):
        values = noisy(seed, 9000)
        for k, (a, b) in enumerate(spans):
            values[a:b] += 8.0 if k % 2 == 0 else -8.0  # 4 sigma up or down, then back
        found = flags(values)
        for a, b in spans:
            found_in_time += bool(found[a:a + 7].any())
            after += int(found[b:b + 30].sum())
            labelled.append(found[a:b].mean())
    # with the old, slower variance EWMA (rate 0.1): 13 recovery points labelled, 58 % of the shifts
    assert found_in_time >= 23  # of 24
    assert after <= 6
    assert np.mean(labelled) > 0.65
