"""A simulated fleet of disks with daily SMART histories, most healthy, some failing.

Failure patterns (sources and proportions in docs/aiops-failure-prediction.md):

- `reallocation`: reallocated sectors (5) grow at an accelerating rate for 1-6 weeks before failure,
  with some pending (197) and reported-uncorrectable (187) errors along the way;
- `pending_burst`: a burst of pending (197) and offline-uncorrectable (198) sectors days before failure;
- `timeout`: command timeouts (188) grow for days to weeks before failure;
- `sudden`: no SMART precursor at all (these cannot be predicted, and the model must not pretend to).

Healthy disks include false-alarm bait: a stable nonzero reallocated count (sometimes one step up), slow
steady reallocation, pending sectors that get remapped, small stable timeout/uncorrectable counts. Power-on
hours and temperature are drawn independently of failure. Deterministic for a given seed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

PRE_OBSERVATION_DAYS = 45
FAILURE_PATTERNS = {"reallocation": 0.35, "pending_burst": 0.22, "timeout": 0.18, "sudden": 0.25}


@dataclass(frozen=True)
class FleetSpec:
    """Size and shape of a simulated fleet."""

    disks: int = 3000
    days: int = 120
    failure_fraction: float = 0.06
    seed: int = 0


def simulate_fleet(spec: FleetSpec) -> pd.DataFrame:
    """Daily rows `disk, day, failure, pattern, smart_5, smart_187, smart_188, smart_197, smart_198,
    smart_194, smart_9`. A failing disk's history ends on its failure day (the row with failure=1),
    as in Backblaze's published data, which falls uniformly on days 1..days-1; healthy disks are
    observed every day."""
    if spec.disks < 1 or spec.days < 31:
        raise ValueError("a fleet needs at least 1 disk and 31 days")
    rng = np.random.default_rng(spec.seed)
    # Disks run for PRE_OBSERVATION_DAYS before observation starts, so some enter the data already
    # degrading (high counts, no visible growth yet), as disks do when monitoring is switched on.
    n, d = spec.disks, spec.days + PRE_OBSERVATION_DAYS
    day = np.arange(d)
    counters = {attr: np.zeros((n, d)) for attr in (5, 187, 188, 197, 198)}
    _healthy_background(rng, counters, n, d)

    failing = rng.random(n) < spec.failure_fraction
    fail_day = np.where(failing, rng.integers(PRE_OBSERVATION_DAYS + 1, d, size=n), d - 1)
    names = list(FAILURE_PATTERNS)
    pattern = np.full(n, "healthy", dtype=object)
    pattern[failing] = rng.choice(names, size=int(failing.sum()), p=list(FAILURE_PATTERNS.values()))
    for i in np.flatnonzero(failing):
        _degrade(rng, counters, i, int(fail_day[i]), pattern[i])

    temperature = rng.normal(36, 4, size=(n, 1)) + rng.normal(0, 1.5, size=(n, d))
    power_on_hours = rng.uniform(500, 45000, size=(n, 1)) + 24 * day

    observed = (day[None, :] >= PRE_OBSERVATION_DAYS) & (day[None, :] <= fail_day[:, None])
    rows, cols = np.nonzero(observed)
    frame = pd.DataFrame(
        {
            "disk": np.char.add("disk-", rows.astype(str)),
            "day": cols - PRE_OBSERVATION_DAYS,
            "failure": (failing[rows] & (cols == fail_day[rows])).astype(int),
            "pattern": pattern[rows],
        }
    )
    for attr, values in counters.items():
        frame[f"smart_{attr}"] = values[rows, cols].round()
    frame["smart_194"] = temperature[rows, cols].round()
    frame["smart_9"] = power_on_hours[rows, cols].round()
    return frame


def _cumulative_poisson(rng: np.random.Generator, rates: np.ndarray) -> np.ndarray:
    return np.cumsum(rng.poisson(np.maximum(rates, 0.0)), axis=-1).astype(float)


def _healthy_background(rng: np.random.Generator, counters: dict, n: int, d: int) -> None:
    """Benign SMART counts that every disk, failing or not, may carry."""
    stable = rng.random(n) < 0.10  # remapped long ago, then stable: the classic false-alarm bait
    counters[5][stable] += np.round(rng.lognormal(3.0, 1.0, size=(stable.sum(), 1)))
    for i in np.flatnonzero(stable & (rng.random(n) < 0.3)):  # one later step up, then stable again
        counters[5][i, rng.integers(0, d) :] += rng.integers(1, 9)
    transient = np.flatnonzero(rng.random(n) < 0.04)  # pending sectors that get remapped a few days later
    for i in transient:
        start, length, size = rng.integers(0, d - 3), rng.integers(1, 4), rng.integers(1, 9)
        counters[197][i, start : start + length] += size
        counters[5][i, start + length :] += size
    slow = rng.random(n) < 0.02  # slow, steady reallocation on a disk that keeps working
    counters[5][slow] += _cumulative_poisson(rng, np.broadcast_to(rng.uniform(0.05, 0.5, size=(slow.sum(), 1)), (slow.sum(), d)))
    for attr, share, scale in ((188, 0.05, 10), (187, 0.03, 3)):
        holders = rng.random(n) < share
        counters[attr][holders] += rng.integers(1, scale + 1, size=(holders.sum(), 1))


def _degrade(rng: np.random.Generator, counters: dict, i: int, fail: int, pattern: str) -> None:
    """Add the precursors of `pattern` to disk `i`, which fails on day `fail`."""
    if pattern == "reallocation":
        lead = int(rng.integers(7, 46))
        t = np.arange(lead + 1)
        final_rate = float(np.exp(rng.uniform(np.log(2), np.log(150))))  # some degrade only slowly
        start_rate = rng.uniform(0.2, 1.5)
        rates = start_rate * np.exp(np.log(final_rate / start_rate) * t / lead)
        span = slice(fail - lead, fail + 1)
        counters[5][i, span] += _cumulative_poisson(rng, rates)
        counters[197][i, span] += rng.poisson(rates / 15)
        counters[187][i, span] += _cumulative_poisson(rng, rates / 40)
    elif pattern == "pending_burst":
        lead = int(rng.integers(1, 11))
        span = slice(fail - lead, fail + 1)
        burst = rng.uniform(8, 300)
        growth = np.linspace(1.0, rng.uniform(1.0, 3.0), lead + 1)
        counters[197][i, span] += np.round(burst * growth)
        counters[198][i, span] += np.round(burst * growth * rng.uniform(0.2, 0.8))
        counters[187][i, span] += _cumulative_poisson(rng, np.full(lead + 1, rng.uniform(0.5, 4)))
    elif pattern == "timeout":
        lead = int(rng.integers(3, 21))
        span = slice(fail - lead, fail + 1)
        counters[188][i, span] += _cumulative_poisson(rng, np.full(lead + 1, rng.uniform(0.5, 5)))
        counters[187][i, span] += _cumulative_poisson(rng, np.full(lead + 1, rng.uniform(0.0, 1.0)))
    # "sudden": no precursor by definition
