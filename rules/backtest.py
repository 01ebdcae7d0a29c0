"""Backtesting alert rules: when would a rule have fired, evaluated over history as Prometheus does.

Pure functions, no I/O. The input for one rule is what a range query of its expression returns: per
series, the evaluation times at which the expression had a value (the condition held). The rule's
`for` and `keep_firing_for` are applied like Prometheus 2.42's rule manager does at each evaluation:

- the alert turns *pending* at the first evaluation where the condition holds (`active_at`) and
  *fires* at the first evaluation `t` with `t - active_at >= for`; a pending alert whose condition
  fails before that is dropped and never fires;
- a firing alert *resolves* at the first evaluation where the condition no longer holds, or with
  `keep_firing_for`, at the first evaluation at least `keep_firing_for` after the condition first
  failed (holding again meanwhile keeps the same firing going);
- a later activation is a new alert (a new `active_at`, so a new `for`).

A firing is one (series, fire time, resolve time); a *flap* is a firing that starts within
`flap_window` of the previous firing of the same series resolving. Incidents of the notifier overlap
a firing when their times intersect and their labels agree (see `overlaps`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Iterable, Sequence

EPSILON = 1e-6  # seconds; evaluation times come back from Prometheus as millisecond floats


@dataclass(frozen=True)
class Firing:
    """One firing of one series: from the evaluation that fired it to the one that resolved it.

    `end` is clipped to the backtest's end when the alert was still firing there (`open`).
    """

    labels: tuple[tuple[str, str], ...]
    start: float
    end: float
    open: bool = False

    @property
    def seconds(self) -> float:
        return self.end - self.start


@dataclass(frozen=True)
class Incident:
    """A known incident of the notifier: when it was open, its labels, its title (names the alerts)."""

    start: float
    end: float | None  # None: still open
    labels: dict[str, str]
    title: str = ""


@dataclass
class RuleReport:
    """What backtesting one alert rule found between `start` and `end`."""

    alert: str
    group: str
    severity: str
    file: str
    line: int
    step: float
    for_s: float
    keep_firing_for_s: float
    firings: list[Firing] = field(default_factory=list)
    flaps: int = 0
    matched_incidents: int | None = None  # firings that overlap a known incident; None: no incident history
    coarsened_from: float | None = None  # the group's evaluation interval when the step had to be coarser
    from_history: tuple[str, ...] = ()  # recorded series read from the server (not inlined from the specs)

    @property
    def firing_seconds(self) -> float:
        return sum(f.seconds for f in self.firings)

    @property
    def incident_share(self) -> float | None:
        if self.matched_incidents is None or not self.firings:
            return None
        return self.matched_incidents / len(self.firings)

    def noise_key(self) -> tuple:
        """Most noisy first: more firings, then more flaps, then longer firing, then by name."""
        return (-len(self.firings), -self.flaps, -self.firing_seconds, self.alert)


def runs(times: Sequence[float], step: float) -> list[tuple[float, float]]:
    """Consecutive evaluation times (`step` apart) as (first, last) pairs; `times` sorted."""
    found: list[tuple[float, float]] = []
    for t in times:
        if found and t - found[-1][1] <= step + EPSILON:
            found[-1] = (found[-1][0], t)
        else:
            found.append((t, t))
    return found


def _steps_at_least(seconds: float, step: float) -> float:
    """The shortest whole number of steps covering `seconds`, in seconds."""
    return math.ceil(seconds / step - EPSILON) * step if seconds > 0 else 0.0


def firing_intervals(times: Sequence[float], step: float, for_s: float = 0.0, keep_firing_for_s: float = 0.0,
                     end: float = math.inf) -> list[tuple[float, float, bool]]:
    """(fired at, resolved at, still open) for one series whose condition held at `times` (evaluations
    `step` apart); evaluation stops at `end`, where a firing still going is cut and marked open."""
    out: list[tuple[float, float]] = []
    hold = _steps_at_least(for_s, step)
    keep = _steps_at_least(keep_firing_for_s, step)
    for first, last in runs(sorted(times), step):
        if out and out[-1][1] > first + EPSILON:
            # kept firing (keep_firing_for) until the condition held again: the same firing goes on
            out[-1] = (out[-1][0], last + step + keep)
            continue
        fired = first + hold
        if fired <= last + EPSILON:  # else the condition failed while the alert was pending
            out.append((fired, last + step + keep))
    return [(s, min(e, end), e > end + EPSILON) for s, e in out if s <= end + EPSILON]


def series_firings(labels: dict[str, str], times: Sequence[float], step: float, for_s: float,
                   keep_firing_for_s: float, start: float, end: float) -> list[Firing]:
    """The firings of one series that overlap [start, end], clipped to it."""
    key = tuple(sorted(labels.items()))
    found = []
    for fired, resolved, still in firing_intervals(times, step, for_s, keep_firing_for_s, end):
        if resolved > start + EPSILON or still:
            found.append(Firing(key, max(fired, start), resolved, still))
    return found


def count_flaps(firings: Iterable[Firing], flap_window: float) -> int:
    """Firings that start within `flap_window` after the previous firing of the same series resolved."""
    last_end: dict[tuple, float] = {}
    flaps = 0
    for firing in sorted(firings, key=lambda f: (f.labels, f.start)):
        previous = last_end.get(firing.labels)
        if previous is not None and firing.start - previous <= flap_window + EPSILON:
            flaps += 1
        last_end[firing.labels] = firing.end
    return flaps


def overlaps(alert: str, firing: Firing, incident: Incident) -> bool:
    """True when `incident` covers `firing`: their times intersect, the incident is about this alert
    (its `alertname` label, or the alert's name among the words of its title when the incident's
    labels lack one), and every other label both carry has the same value."""
    incident_end = math.inf if incident.end is None else incident.end
    if not (firing.start < incident_end and incident.start < firing.end):
        return False
    named = incident.labels.get("alertname")
    if named is None:
        words = incident.title.replace(",", " ").split()
        if alert not in words:
            return False
    elif named != alert:
        return False
    labels = dict(firing.labels)
    return all(labels.get(k, v) == v for k, v in incident.labels.items() if k != "alertname")


def matched_firings(alert: str, firings: Iterable[Firing], incidents: Sequence[Incident]) -> int:
    return sum(1 for f in firings if any(overlaps(alert, f, i) for i in incidents))


def ranked(reports: Iterable[RuleReport]) -> list[RuleReport]:
    """Reports sorted by noise, most noisy first."""
    return sorted(reports, key=RuleReport.noise_key)
