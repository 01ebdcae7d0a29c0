"""The tests' one simulated "now" and one fake clock (no tests, no fixtures here: tests/conftest.py
serves them as fixtures; helpers that build a clock themselves import `FakeClock` from here).

Every test whose simulated time may start anywhere takes its "now" from `SIM_NOW`: a fixed instant
by default, so no test depends on the day or the hour it runs, and `VIGIL_TEST_NOW` moves it
(RFC 3339, UTC without an offset, or Unix seconds) to prove the tests hold whatever the instant:

    VIGIL_TEST_NOW=2026-12-05T12:00:00Z .venv/bin/pytest -m sim_now

`make test-any-day` runs them at a Saturday, a Sunday, the last seconds of a year and the nights of the
daylight-saving changes in Europe/Berlin and America/New_York (docs/testing.md).
"""

from __future__ import annotations

import os

from vigil.common.times import parse_time

#: the default simulated now: Friday 2027-01-15 08:00:00 UTC, the instant most notifier tests began at
DEFAULT_NOW = 1_800_000_000.0
NOW_VARIABLE = "VIGIL_TEST_NOW"


def read_now(text: str | None) -> float:
    """The instant `text` names (Unix seconds, or RFC 3339 as `parse_time` reads it: without an offset it
    is UTC); DEFAULT_NOW for none; ValueError naming the variable for anything else."""
    if not text:
        return DEFAULT_NOW
    try:
        return float(text)
    except ValueError:
        pass
    try:
        moment = parse_time(text)
    except ValueError:
        moment = None
    if moment is None:
        raise ValueError(f"{NOW_VARIABLE}={text!r} is neither an RFC 3339 time (2026-12-05T12:00:00Z) "
                         "nor Unix seconds")
    return moment


SIM_NOW = read_now(os.environ.get(NOW_VARIABLE))


class FakeClock:
    """A settable clock for code that takes `clock: Callable[[], float]`: calling it answers the time;
    set `t` (or its alias `now`), or `advance(seconds)`; a `step` moves it on by that much on each call
    (before answering), for code that must see time pass between two reads."""

    def __init__(self, t: float = SIM_NOW, step: float = 0.0) -> None:
        self.t, self.step = float(t), step

    def __call__(self) -> float:
        self.t += self.step
        return self.t

    @property
    def now(self) -> float:
        return self.t

    @now.setter
    def now(self, value: float) -> None:
        self.t = value

    def advance(self, seconds: float) -> float:
        self.t += seconds
        return self.t
