"""Generating the synthetic KPI series (numpy only, one `numpy.random.Generator` per series seed).

Every series is minute-level, 7 to 14 days long (10,080 to 20,160 points), starts on a Monday at
00:00 UTC and is anomaly-free for its first `CLEAN_DAYS` days (a detector's warm-up). Its base curve is
one of:

* `periodic`: a daily profile (two to three harmonics, random phases) with lower weekends, a slow
  drift and AR(1) noise — web traffic, request rates;
* `stable`: a flat level with small AR(1) noise — a queue depth, a temperature;
* `unstable`: a wandering level (smoothed random walk) with heavy-tailed (Student t, 4 degrees of
  freedom) noise and harmless bursts of higher noise — no pattern a seasonal model could learn.

Then 3 to 7 labelled segments of one anomaly kind are injected, at least 6 hours apart. Magnitudes are
in units of the series' noise scale `sigma`, chosen so that a good detector finds most but not all:

* `spike` / `dip`: 1–3 / 1–15 points, 6–14 sigma up / down;
* `level_shift`: 60–360 points moved by 4–8 sigma (either way), then back;
* `variance`: 60–360 points whose noise is 3–6 times larger;
* `trend`: a ramp of 20–120 points reaching 10–20 sigma (either way), then back (a leak that is fixed);
  labelled from where it is 3 sigma off (where a person labelling the chart sees it leave the noise);
* `missing`: 5–60 points with no value (NaN: the scrape failed), labelled — an operator wants to know.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone

import numpy as np

CURVE_CLASSES = ("periodic", "stable", "unstable")
ANOMALY_KINDS = ("spike", "dip", "level_shift", "variance", "trend", "missing")
HALVES = ("tune", "heldout")

STEP_S = 60
DAY = 1440  # points per day at one point a minute
CLEAN_DAYS = 3
START = datetime(2024, 1, 1, tzinfo=timezone.utc)  # a Monday
MIN_GAP = 360  # points between two anomaly segments
VISIBLE_SIGMAS = 3.0  # a ramp's label starts where it is this many sigmas off


@dataclass(frozen=True)
class KpiSeries:
    """One benchmark series: values (NaN where data is missing) and a label per point."""

    name: str  # e.g. "periodic-spike-3"
    curve: str
    kind: str
    seed: int
    half: str
    values: np.ndarray
    labels: np.ndarray  # bool, True inside a labelled anomaly segment
    start_s: float = START.timestamp()
    step_s: float = STEP_S

    def __len__(self) -> int:
        return self.values.size

    def timestamps(self) -> list[str]:
        """ISO 8601 timestamps (`YYYY-MM-DD HH:MM:SS`, UTC), the format `vigil aiops detect` reads."""
        secs = (self.start_s + self.step_s * np.arange(self.values.size)).astype("datetime64[s]")
        return [s.replace("T", " ") for s in np.datetime_as_string(secs, unit="s")]


def _ar1(rng: np.random.Generator, n: int, phi: float, shocks: np.ndarray | None = None) -> np.ndarray:
    """AR(1) noise with unit marginal scale (the shocks are scaled by sqrt(1 - phi^2))."""
    e = (rng.standard_normal(n) if shocks is None else shocks) * np.sqrt(1.0 - phi * phi)
    out = np.empty(n)
    acc = 0.0
    for i, shock in enumerate(e.tolist()):  # 20k points: a plain loop is fast enough and obviously right
        acc = phi * acc + shock
        out[i] = acc
    return out


def _periodic(rng: np.random.Generator, n: int) -> tuple[np.ndarray, float]:
    t = np.arange(n) / DAY  # days
    level = rng.uniform(200, 2000)
    amplitude = level * rng.uniform(0.2, 0.6)
    shape = np.zeros(n)
    for k in range(1, int(rng.integers(2, 4)) + 1):
        shape += rng.uniform(0.2, 1.0) / k * np.sin(2 * np.pi * k * t + rng.uniform(0, 2 * np.pi))
    shape /= np.abs(shape).max()
    # quieter weekends (day 0 is a Monday), easing in and out over a few hours around midnight
    distance = np.abs(t % 7 - 6.0)
    distance = np.minimum(distance, 7.0 - distance)  # days from Sunday 00:00, circularly
    weekend = 1.0 - rng.uniform(0.1, 0.25) / (1.0 + np.exp(-12.0 * (1.0 - distance)))
    drift = 1.0 + rng.uniform(-0.05, 0.05) * t / 7
    sigma = amplitude * rng.uniform(0.03, 0.08)
    base = (level + amplitude * shape) * weekend * drift
    return base + sigma * _ar1(rng, n, rng.uniform(0.0, 0.5)), sigma


def _stable(rng: np.random.Generator, n: int) -> tuple[np.ndarray, float]:
    level = rng.uniform(10, 500)
    sigma = level * rng.uniform(0.01, 0.05)
    return level + sigma * _ar1(rng, n, rng.uniform(0.0, 0.5)), sigma


def _unstable(rng: np.random.Generator, n: int) -> tuple[np.ndarray, float]:
    level = rng.uniform(50, 500)
    sigma = level * rng.uniform(0.03, 0.08)
    walk = np.cumsum(rng.standard_normal(n)) * sigma * 0.05
    kernel = np.ones(240) / 240
    walk = np.convolve(np.concatenate((np.full(239, walk[0]), walk)), kernel, mode="valid")
    shocks = rng.standard_t(4, n) / np.sqrt(2.0)  # unit variance
    scale = np.ones(n)
    for _ in range(int(rng.integers(3, 8))):  # harmless noisy stretches, not labelled
        at, length = int(rng.integers(0, n)), int(rng.integers(30, 240))
        scale[at:at + length] *= rng.uniform(1.3, 1.8)
    noise = _ar1(rng, n, rng.uniform(0.3, 0.7), shocks) * scale
    return level + walk + sigma * noise, sigma


CURVES = {"periodic": _periodic, "stable": _stable, "unstable": _unstable}


def _place(rng: np.random.Generator, n: int, lengths: list[int]) -> list[tuple[int, int]]:
    """Non-overlapping [start, end) segments after the clean prefix, at least MIN_GAP apart."""
    first = CLEAN_DAYS * DAY
    slack = n - first - sum(lengths) - MIN_GAP * (len(lengths) + 1)
    cuts = np.sort(rng.uniform(0, max(slack, 0), len(lengths)))
    out, pos = [], first
    prev_cut = 0.0
    for length, cut in zip(lengths, cuts):
        pos += MIN_GAP + int(cut - prev_cut)
        prev_cut = cut
        out.append((pos, pos + length))
        pos += length
    return out


def _inject(rng: np.random.Generator, kind: str, x: np.ndarray, sigma: float, a: int, b: int) -> int:
    """Inject one anomaly into x[a:b]; returns where its label starts."""
    length = b - a
    sign = rng.choice((-1.0, 1.0))
    if kind == "spike":
        x[a:b] += rng.uniform(6, 14) * sigma
    elif kind == "dip":
        x[a:b] -= rng.uniform(6, 14) * sigma
    elif kind == "level_shift":
        x[a:b] += sign * rng.uniform(4, 8) * sigma
    elif kind == "variance":
        x[a:b] += rng.uniform(2, 5) * sigma * rng.standard_normal(length)  # total noise ~3-6x
    elif kind == "trend":
        ramp = rng.uniform(10, 20) * np.arange(1, length + 1) / length  # in sigmas
        x[a:b] += sign * sigma * ramp
        # a labeller marks a ramp from where it leaves the noise band, not from its invisible start
        return a + int(np.argmax(ramp >= VISIBLE_SIGMAS))
    elif kind == "missing":
        x[a:b] = np.nan
    return a


LENGTHS = {"spike": (1, 3), "dip": (1, 15), "level_shift": (60, 360), "variance": (60, 360),
           "trend": (20, 120), "missing": (5, 60)}


def make_series(curve: str, kind: str, seed: int, half: str = "tune") -> KpiSeries:
    """One series, entirely determined by (curve, kind, seed)."""
    rng = np.random.default_rng([CURVE_CLASSES.index(curve), ANOMALY_KINDS.index(kind), seed])
    n = int(rng.integers(7 * DAY, 14 * DAY + 1))
    values, sigma = CURVES[curve](rng, n)
    lo, hi = LENGTHS[kind]
    spans = _place(rng, n, [int(rng.integers(lo, hi + 1)) for _ in range(int(rng.integers(3, 8)))])
    labels = np.zeros(n, dtype=bool)
    for a, b in spans:
        labels[_inject(rng, kind, values, sigma, a, b):b] = True
    return KpiSeries(f"{curve}-{kind}-{seed}", curve, kind, seed, half, values, labels)


def make_benchmark(half: str | None = None, per_half: int = 2) -> list[KpiSeries]:
    """The benchmark: for every curve × kind, seeds 0..2*per_half-1; even seeds are `tune`, odd `heldout`.

    `half` restricts to one half (and generates only that half).
    """
    if half is not None and half not in HALVES:
        raise ValueError(f"unknown half {half!r}; choose from {', '.join(HALVES)}")
    out = []
    for curve in CURVE_CLASSES:
        for kind in ANOMALY_KINDS:
            for seed in range(2 * per_half):
                which = HALVES[seed % 2]
                if half in (None, which):
                    out.append(make_series(curve, kind, seed, which))
    return out
