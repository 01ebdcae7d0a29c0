"""Seasonal profile: robust time-of-day location, optional day-of-week offsets (UTC)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vigil.aiops.baseline.robust import DAY_S, grouped_quantile

# Finest time-of-day resolution: 5-minute bins (288 per day); coarser when the grid step is coarser.
MIN_BIN_S = 300.0
# The profile is smoothed by a circular moving average over this many bins (a median of 14 days per
# bin is still noisy; a daily cycle hardly changes within 15 minutes).
SMOOTH_BINS = 3
# Day-of-week offsets need every weekday seen about twice: about two weeks of history.
WEEKLY_MIN_SPAN_S = 13 * DAY_S


@dataclass
class SeasonalFit:
    """Time-of-day profile (`bin_s` seconds per bin) plus optional Monday…Sunday offsets."""

    bin_s: float
    profile: np.ndarray
    weekday: np.ndarray | None

    def expected(self, t: np.ndarray) -> np.ndarray:
        """Expected value at Unix times `t`."""
        t = np.asarray(t, dtype=np.float64)
        value = self.profile[time_of_day_bin(t, self.bin_s, self.profile.size)]
        if self.weekday is not None:
            value = value + self.weekday[weekday_of(t)]
        return value


def time_of_day_bin(t: np.ndarray, bin_s: float, n_bins: int) -> np.ndarray:
    """Index of the time-of-day bin (UTC) of each time."""
    return np.minimum(((t % DAY_S) // bin_s).astype(np.int64), n_bins - 1)


def weekday_of(t: np.ndarray) -> np.ndarray:
    """0 = Monday … 6 = Sunday (UTC; 1970-01-01 was a Thursday)."""
    return ((t // DAY_S + 3) % 7).astype(np.int64)


def seasonal_fit(t: np.ndarray, x: np.ndarray, step: float, weekly: bool) -> SeasonalFit:
    """Fit the profile to finite samples `x` at times `t`.

    With `weekly`, alternates once: daily profile → weekday offsets of the residual → daily profile of
    the series without the weekday offsets, so a weekend dip does not leak into the daily profile.
    """
    n_bins = max(1, int(DAY_S // max(step, MIN_BIN_S)))
    bin_s = DAY_S / n_bins
    bins = time_of_day_bin(t, bin_s, n_bins)
    profile = _profile(bins, x, n_bins)
    weekday = None
    if weekly:
        days = weekday_of(t)
        weekday = grouped_quantile(days, x - profile[bins], 0.5, 7)
        weekday = np.where(np.isfinite(weekday), weekday, 0.0)
        weekday -= np.median(weekday)
        profile = _profile(bins, x - weekday[days], n_bins)
    return SeasonalFit(bin_s, profile, weekday)


def _profile(bins: np.ndarray, x: np.ndarray, n_bins: int) -> np.ndarray:
    med = grouped_quantile(bins, x, 0.5, n_bins)
    if np.isnan(med).all():
        return np.zeros(n_bins)
    # bins never observed take the nearest observed value (circularly)
    if np.isnan(med).any():
        idx = np.arange(n_bins)
        seen = ~np.isnan(med)
        med = np.interp(idx, idx[seen], med[seen], period=n_bins)
    if n_bins >= SMOOTH_BINS:
        half = SMOOTH_BINS // 2
        padded = np.concatenate((med[-half:], med, med[:half]))
        med = np.convolve(padded, np.ones(SMOOTH_BINS) / SMOOTH_BINS, mode="valid")
    return med
