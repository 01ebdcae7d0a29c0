"""`vigil-points`: the default detector's point labels (`vigil aiops detect --labels points`): every point
of an anomalous stretch, as operations KPIs are labelled, where `vigil` raises one alarm per episode.

Two causal tests per point, each a signed residual divided by how far that residual normally reaches on
its side (its `quantile` and `1 - quantile` points over the last `norm_days`, refreshed hourly): the
series calibrates itself, and a rise is judged against rises, a drop against drops.

* `local`: the value against the median of the last `local_span` values (spikes, dips, sudden shifts).
  After a gap of more than `local_span` steps the median starts again.
* `daily`: the value against the daily shape plus the current level. The shape is the median, over the
  same time of day (± `season_slack` steps) on each of the last `season_days` days, of the value then less
  the level then (the median of the last `level_days` of values: a level over whole days, so the shape
  does not jump when the level moves). The current level is that level plus the median of this residual
  over the last `offset_s`: a moved level is the reference within the hour. Needs a daily period of 10 to
  `max_period` points, learned from the first intervals; slots come from the timestamps, so gaps do not
  shift the pattern.

A point whose larger ratio reaches `k` starts (or continues) an anomalous stretch. The stretch is held
while the value stays beyond the expectation frozen at its start (the current level before it plus the
daily shape, or the local median before it where there is no shape) by `k` reaches of then, on the side
it started, for at most `max_hold_s`. After a stretch, for an hour of points, a residual back towards
normal is no anomaly (the tests' medians still sit inside the stretch). Labels never change what the
tests learn.

Score: r / (1 + r) with r = the ratio (or the held deviation) over `k`, so 0.5 is exactly the label line.
`sensitivity` s sets k = `k` · 2^(1 − 2s) (the odds scaling of `aiops.detect.labels`). The first day of
points (`warmup_days`, at least `min_points`; or `warmup` points) is the warm-up: it scores 0, and a test
labels nothing until its normaliser holds half a warm-up of residuals.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from statistics import median

from vigil.aiops.detect.base import Detector, check_warmup
from vigil.aiops.detect.points_parts import Normaliser, RollingMedian, SlotHistory, value_floor
from vigil.common.times import parse_time

DAY_S = 86400.0
TESTS = ("local", "daily")


@dataclass(frozen=True)
class PointsParameters:
    k: float = 1.85  # the label line, in reaches (best on the 26 AIOps-2018 series; --sensitivity moves it)
    local_span: int = 10  # points whose median the local test compares with
    season_days: int = 3
    season_slack: int = 2  # steps either side of the same time of day
    level_days: float = 1.0  # the daily shape is measured from the level: the median of the values over this span
    offset_s: float = 3600.0  # the daily test's current level: that level plus the median residual over this span
    quantile: float = 0.99  # a residual's normal reach: this quantile of its last norm_days (and 1 - it)
    norm_days: float = 7.0
    refresh_s: float = 3600.0  # the reaches are recomputed this often
    warmup_days: float = 1.0  # the warm-up: no label before this span has passed (the normalisers fill)
    warmup: int | None = None  # points; when set, replaces warmup_days
    min_points: int = 100  # spans in points are at least this, at most max_points
    max_points: int = 50000
    max_hold_s: float = 2 * 3600.0
    max_period: int = 5760  # daily periods longer than this (sampling faster than 15 s) go without the daily test
    period_probe: int = 20  # intervals used to learn the sampling step

    @classmethod
    def for_sensitivity(cls, sensitivity: float, **overrides) -> "PointsParameters":
        if not 0.0 <= sensitivity <= 1.0:
            raise ValueError(f"sensitivity must be in [0, 1], got {sensitivity}")
        base = cls(**overrides)
        return replace(base, k=base.k * 2.0 ** (1.0 - 2.0 * sensitivity))


class VigilPointsDetector(Detector):
    """Local and daily-pattern residuals against their own normal reach, with held stretches."""

    name = "vigil-points"
    version = "1"
    own_sensitivity = True  # the sensitivity moves k (the hold uses it too), not a cut on the score

    @classmethod
    def create(cls, warmup: int | None = None, sensitivity: float | None = None) -> "VigilPointsDetector":
        """`warmup`: points before the first label (more than `period_probe`); `sensitivity` in [0, 1]."""
        if sensitivity is None:
            return cls(PointsParameters(warmup=warmup))
        return cls(PointsParameters.for_sensitivity(sensitivity, warmup=warmup))

    def __init__(self, params: PointsParameters | None = None):
        p = self.params = params or PointsParameters()
        check_warmup(self.name, p.warmup, p.period_probe)
        self._count = 0
        self._probe: list[tuple[float, float]] = []  # (time, value) until the step is learned
        self._magnitude = 0.0
        self._stretch: _Stretch | None = None
        self._returning = (0, 0)  # (side, points left) after a stretch: the local median still holds it
        self._why: tuple | None = None
        self._started = False

    def parameters(self) -> dict:
        return {"version": self.version, **asdict(self.params)}

    @property
    def warming_up(self) -> bool:
        return not self._started or self._count <= self._warmup

    # -- set-up once the sampling step is known ---------------------------------------------------------
    def _start(self) -> None:
        p = self.params
        times = [t for t, _ in self._probe]
        step = median(b - a for a, b in zip(times, times[1:]))
        self._step = step if step > 0 else 60.0
        self._t0 = times[0]
        per_day = DAY_S / self._step
        period = round(per_day)
        self._period = period if 10 < period <= p.max_period else 0

        def points(days: float) -> int:
            return int(min(max(days * per_day, p.min_points), p.max_points))

        size, refresh = points(p.norm_days), max(1, round(p.refresh_s / self._step))
        self._warmup = p.warmup if p.warmup is not None else points(p.warmup_days)
        ready = max(10, self._warmup // 2)  # a normaliser calibrates on half a warm-up of residuals at least
        self._norms = [Normaliser(size, p.quantile, refresh, ready), Normaliser(size, p.quantile, refresh, ready)]
        self._local = RollingMedian(p.local_span)
        self._level = RollingMedian(points(p.level_days))
        self._offset = RollingMedian(max(3, round(p.offset_s / self._step)))
        self._return_points = max(p.local_span, round(p.offset_s / self._step))
        self._days = tuple(range(1, p.season_days + 1))
        self._slots = SlotHistory(self._period, p.season_days, p.season_slack) if self._period else None
        self._max_hold = max(1, round(p.max_hold_s / self._step))
        self._last_slot = None
        self._started = True
        probe, self._probe = self._probe, []
        for t, x in probe:  # the probe's points are learned (they fall in the warm-up: no labels)
            self._observe(t, x)

    # -- the two tests -------------------------------------------------------------------------------------
    def _observe(self, t: float, value: float) -> tuple[list[float], list[float], float | None, float | None]:
        """Residuals and ratios of both tests at `value` (0 where a test cannot judge yet), then learn it.
        Also the daily shape at this time of day and the current level the daily test adds to it (None
        without a shape)."""
        p = self.params
        slot = round((t - self._t0) / self._step)
        if self._last_slot is not None and slot - self._last_slot > p.local_span:
            self._local.clear()  # the last values are from before a gap: no local reference
        self._last_slot = slot
        self._magnitude = max(self._magnitude, abs(value))
        floor = value_floor(self._magnitude)
        residuals, ratios = [0.0, 0.0], [0.0, 0.0]
        if len(self._local) >= max(1, p.local_span // 2):
            residuals[0] = value - self._local.median()
            ratios[0] = self._norms[0].ratio(residuals[0], floor)
            self._norms[0].push(residuals[0])
        self._local.push(value)
        level = self._level.median() if len(self._level) else value
        settled = self._level.full  # a level over a whole day: the shape is measured from it
        self._level.push(value)
        shape, current = None, None
        if self._slots is not None and settled:
            shape = self._slots.expected(slot, self._days)
            if shape is not None:
                # the level of the last hour against the shape: a moved level is the reference within minutes
                current = level + (self._offset.median() if len(self._offset) else 0.0)
                residuals[1] = value - current - shape
                ratios[1] = self._norms[1].ratio(residuals[1], floor)
                self._norms[1].push(residuals[1])
                self._offset.push(value - level - shape)
            self._slots.push(slot, value - level)
        return residuals, ratios, shape, current

    # -- streaming -----------------------------------------------------------------------------------------
    def update(self, timestamp: str, value: float) -> float:
        self._why = None
        self._count += 1
        if not self._started:
            self._probe.append((parse_time(timestamp), value))
            if len(self._probe) > self.params.period_probe:
                self._start()
            return 0.0
        # what a stretch starting here would freeze, read before this point is learned
        local = self._local.median() if len(self._local) else value
        reaches = [(n.reach(-1, 0.0), n.reach(1, 0.0)) for n in self._norms]
        residuals, ratios, shape, current = self._observe(parse_time(timestamp), value)
        if self.warming_up:
            return 0.0
        p, stretch = self.params, self._stretch
        held = stretch.held(value, shape, self._max_hold) if stretch else None
        back = stretch.direction if stretch else self._returning[0]
        if back and (held is None or held < p.k):
            for test in (0, 1):  # the value returning from a stretch, against medians still inside it: no new anomaly
                if residuals[test] * back < 0:
                    ratios[test] = 0.0
        test = 0 if ratios[0] >= ratios[1] else 1
        r = ratios[test] / p.k  # r >= 1: labelled
        if stretch is not None:
            r = max(r, (held or 0.0) / p.k)
            if r < 1.0:
                self._stretch, self._returning = None, (stretch.direction, self._return_points)
        elif r >= 1.0:
            direction = 1 if residuals[test] > 0 else -1
            daily = shape is not None and self._norms[1].ready
            self._stretch = _Stretch(direction, daily, current if daily else local,
                                     max(reaches[1 if daily else 0][direction > 0], value_floor(self._magnitude)))
        if self._stretch is None and self._returning[1]:
            self._returning = (self._returning[0], self._returning[1] - 1) if self._returning[1] > 1 else (0, 0)
        if self.explaining:
            self._why = (test, residuals[test], ratios[test], held, stretch)
        return r / (1.0 + r)

    def explain(self) -> str:
        if self._why is None:
            return ""
        test, residual, ratio, held, stretch = self._why
        p = self.params
        if held is not None and held >= ratio:
            return (f"held: {'above' if stretch.direction > 0 else 'below'} {stretch.base:.6g}, the expectation frozen at "
                    f"the stretch's start, by {held:.2f}x its normal reach then (held while at least "
                    f"{p.k:.3g}x, for up to {p.max_hold_s / 3600:g} h)")
        what = ("the median of the last points" if test == 0
                else "the level plus the daily shape at this time of day")
        side = "rise" if residual > 0 else "drop"
        return (f"{TESTS[test]}: {side} of {abs(residual):.6g} against {what}, {ratio:.2f}x the {side}s it "
                f"normally makes (label line {p.k:.3g}x)")


@dataclass
class _Stretch:
    """An anomalous stretch: its side, and the expectation frozen at its start (the level before it plus
    the daily shape, or the local median before it where there is no daily shape), in reaches of then."""

    direction: int
    daily: bool
    level: float
    reach: float
    points: int = 0
    base: float = 0.0

    def held(self, value: float, shape: float | None, max_points: int) -> float | None:
        """How far `value` lies beyond the frozen expectation on the stretch's side, in reaches; None once
        the stretch is `max_points` long, or without the daily shape it started with."""
        self.points += 1
        if self.points > max_points or (self.daily and shape is None):
            return None
        self.base = self.level + shape if self.daily else self.level
        return (value - self.base) * self.direction / self.reach
