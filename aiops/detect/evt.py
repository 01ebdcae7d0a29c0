"""Automatic thresholds from extreme value theory: SPOT, streaming peaks over threshold (Siffer et al.,
KDD'17), numpy only.

The Pickands–Balkema–de Haan theorem says that the excesses of a signal over a high enough threshold
`t` follow a generalized Pareto distribution (GPD, scale sigma, shape xi) whatever the signal's law. So
with `n` observations of which `N_t` exceeded `t`, the value exceeded with probability `q` is

    z_q = t + sigma / xi * ((q * n / N_t) ** -xi - 1)      (xi != 0)
    z_q = t - sigma * log(q * n / N_t)                      (xi == 0, the exponential tail)

`Spot.fit` sets `t` to a high empirical quantile (`level`, 0.98) of a calibration sample (the warm-up)
and fits the GPD to the excesses; `Spot.update` then streams: a value above `z_q` is an anomaly and is
*not* learned (an incident must not teach the threshold that incidents are normal); a value between
`t` and `z_q` is a new peak and the GPD is refitted; any other value only counts in `n`.

The GPD is fitted by probability-weighted moments (Hosking & Wallis, 1987): closed form, no optimiser,
well behaved for the shapes operations data shows (-0.5 < xi < 0.5), and for small samples. Peaks are
kept in a bounded window (`max_peaks`), so the tail follows slow changes of the signal.
"""

from __future__ import annotations

import math
from collections import deque

import numpy as np

#: below this many peaks no tail is fitted: the threshold is the calibration maximum plus a margin
MIN_PEAKS = 10
XI_LIMIT = 0.9  # PWM shapes are clamped to (-XI_LIMIT, XI_LIMIT): beyond, the estimate is noise


def fit_gpd(excesses: np.ndarray) -> tuple[float, float]:
    """(sigma, xi) of a generalized Pareto distribution fitted to positive `excesses` by PWM."""
    y = np.sort(np.asarray(excesses, dtype=float))
    n = y.size
    a0 = float(y.mean())
    p = (np.arange(1, n + 1) - 0.35) / n
    a1 = float(np.mean((1.0 - p) * y))
    denominator = a0 - 2.0 * a1
    if a0 <= 0.0 or denominator <= 0.0:
        return max(a0, 1e-12), 0.0
    xi = min(max(2.0 - a0 / denominator, -XI_LIMIT), XI_LIMIT)
    sigma = 2.0 * a0 * a1 / denominator
    return max(sigma, 1e-12), xi


def gpd_quantile(t: float, sigma: float, xi: float, q: float, n: int, n_peaks: int) -> float:
    """The value exceeded with probability `q`, given `n_peaks` of `n` observations exceeded `t`."""
    r = q * n / n_peaks
    if r >= 1.0:  # the risk is not rarer than the initial threshold's own
        return t
    if abs(xi) < 1e-6:
        return t - sigma * math.log(r)
    return t + sigma / xi * (r ** -xi - 1.0)


class Spot:
    """Streaming peaks-over-threshold detector for one signal (upper tail)."""

    def __init__(self, q: float, level: float = 0.98, max_peaks: int = 2000):
        if not 0.0 < q < 1.0 - level:
            raise ValueError(f"risk q must be in (0, {1.0 - level:g}), got {q}")
        self.q, self.level = q, level
        self._peaks: deque[float] = deque(maxlen=max_peaks)
        self._n = 0
        self._n_peaks = 0
        self.t = 0.0
        self.threshold = math.inf
        self._in_run = False

    def fit(self, calibration: np.ndarray) -> None:
        """Initial threshold and tail from a calibration sample (finite values)."""
        x = np.asarray(calibration, dtype=float)
        x = x[np.isfinite(x)]
        if x.size == 0:
            raise ValueError("no finite calibration values")
        self.t = float(np.quantile(x, self.level))
        peaks = x[x > self.t] - self.t
        self._peaks.clear()
        self._peaks.extend(peaks.tolist())
        self._n, self._n_peaks = int(x.size), int(peaks.size)
        self._calibration_max = float(x.max())
        self._refit()

    def _refit(self) -> None:
        if self._n_peaks < MIN_PEAKS or len(self._peaks) < MIN_PEAKS:
            # too few excesses to fit a tail (a flat or nearly flat signal): anything above what was
            # seen, by a margin, is an anomaly
            spread = self._calibration_max - self.t
            self.threshold = self._calibration_max + max(spread, 1e-9 * max(abs(self.t), 1.0))
            return
        self.sigma, self.xi = fit_gpd(np.fromiter(self._peaks, float))
        self.threshold = gpd_quantile(self.t, self.sigma, self.xi, self.q, self._n, self._n_peaks)

    def exceeds(self, x: float) -> bool:
        """Whether `x` lies beyond the current threshold (learns nothing)."""
        return x > self.threshold

    def learn(self, x: float) -> None:
        """Count a normal value: a new peak refits the tail; any value moves `n`."""
        self._n += 1
        if x > self.t:
            self._peaks.append(x - self.t)
            self._n_peaks += 1
            self._refit()
        elif self._n_peaks >= MIN_PEAKS:  # n moved: the quantile moves a little (no refit needed)
            self.threshold = gpd_quantile(self.t, self.sigma, self.xi, self.q, self._n, self._n_peaks)

    def update(self, x: float) -> bool:
        """Consume one value; True when it lies beyond the threshold.

        The first value of a run beyond the threshold is learned *censored*, as a peak at the threshold
        ("at least this high"): learning nothing would make the tail look lighter with every exceedance
        and walk the threshold down (about 15 % low after 50,000 exponential values at q = 1e-3);
        learning its value, or every value of a sustained run, would let an incident raise it.
        """
        if self.exceeds(x):
            if not self._in_run:
                self.learn(self.threshold)
            self._in_run = True
            return True
        self._in_run = False
        self.learn(x)
        return False
