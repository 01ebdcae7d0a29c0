"""vigil's own anomaly detector: several causal deviation tests, each scored as a "record" against its
own recent history, plus alarm suppression.

Each point feeds five sub-detectors. The first four compare a *current* summary of a signal with the
mean and standard deviation of a long trailing *baseline* of that signal (which never includes the
current summary) and yield a deviation z; the fifth compares the value with every earlier one:

* `spike`: the value itself against the last `baseline` values;
* `shift`: the mean of the last `shift_span` values against the baseline that ends before them
  (a level shift shows after a few points even when no single point is extreme);
* `season`: the value minus the value one day earlier (the lag is learned from the first timestamps),
  or one week earlier when that is closer, averaged over `season_span` points: catches a daily
  pattern that stops, flattens or changes shape, without alarming on every Monday;
* `volatility`: the mean absolute step over the last `volatility_span` points against its own history
  (variance changes, noise bursts, a signal that goes flat);
* `breakout`: how far the value lies outside the range of every earlier value of the last
  `breakout_window` points (a new high or low), as a fraction of that range's width: a value nothing
  before has reached, however noisy the series. The window (10 weeks at 5 minutes) lets a long series
  forget an old glitch that would otherwise hold the range, and the test, for good.

A z alone is not comparable across series (some series are always noisy). So each z is divided by the
largest z of the same sub-detector over the previous `memory` points (`spike_memory` for spikes), and
by at least `z_floor`: a point scores high only when it is more unusual than anything recently seen.
A breakout is divided the same way by the largest breakout of the last `breakout_memory` points, and by
at least `breakout_tolerance`: a new high or low that far beyond the old range (as a share of its width)
is as unusual as a record, and one right after a larger breakout is not (one episode, one alarm).
The largest ratio r over the sub-detectors maps to r / (r + 1), a score in [0, 1) where 0.5 means "as
unusual as the recent record".

Alarm suppression: once r reaches 1, for the next `quiet` points r is multiplied by `quiet_factor`
unless it reaches `escalate`: an episode alarms once unless something clearly stronger follows. The
first `warmup` points score 0 (records learn from its second half); a sub-detector stays silent until
its baseline holds `min_baseline` points (the breakout test: until it has seen that many values).

Memories, the breakout window and the quiet period are meant as spans of time: they are given in points at a 5-minute
sampling interval and shrink proportionally for slower series (hourly data remembers 83 points, not
1,000, i.e. the same 3.5 days).
"""

from __future__ import annotations

from collections import deque
from dataclasses import asdict, dataclass, replace
from datetime import datetime
from statistics import median

from vigil.aiops.detect.base import Detector
from vigil.aiops.detect.rolling import History, Range, RollingMax, RollingMoments, WindowRange

SECONDS_PER_DAY = 86400.0
# what each sub-detector compares (explanations), in the order of `VigilDetector._records`
_TESTS = ("spike (the value against its trailing baseline)",
          "level shift (the mean of the last points against the baseline before them)",
          "daily pattern (the change since the same time yesterday or last week)",
          "volatility (the mean step size against its own history)",
          "breakout (a new high or low beyond every earlier value{window})")
WEEK_IN_DAYS = 7


@dataclass(frozen=True)
class VigilParameters:
    """Settings of `VigilDetector`; lengths are in points (see `reference_interval_s`)."""

    baseline: int = 5000
    shift_span: int = 10
    season_span: int = 10
    volatility_span: int = 50
    memory: int = 1000
    spike_memory: int = 2000  # single-point spikes recur more in heavy-tailed series: remember longer
    z_floor: float = 3.0
    warmup: int = 200  # chosen by a grid checked across NAB's halves (commit af6f3d8; docs/aiops-anomaly.md)
    quiet: int = 200  # points after an alarm during which ratios are damped
    quiet_factor: float = 0.3
    escalate: float = 1.5  # within the quiet period, a ratio at least this high still alarms
    # a new all-time high or low this far beyond the range seen so far (as a fraction of its width) is as
    # unusual as a record (Numenta's HTM detector uses 5 % for its "spatial anomaly"); 0: no breakout test
    breakout_tolerance: float = 0.05
    breakout_memory: int = 300  # points whose largest breakout a new one must beat
    # points whose range a breakout leaves (10 weeks at 5 minutes; 0: every value so far): one glitch
    # must not blind the test for good on a long series
    breakout_window: int = 20000
    # memories and the quiet period are counted in points at this sampling interval; a slower series
    # gets proportionally fewer points (the same span of time), a faster one keeps the counts
    reference_interval_s: float = 300.0
    min_baseline: int = 100  # a sub-detector stays silent until its baseline holds this many points
    period_probe: int = 20  # intervals used to learn the sampling rate, hence the daily lag
    max_period: int = 2000  # daily lags beyond this many points are not followed


class _Deviation:
    """|mean of the last `span` signal values - baseline mean| / baseline std.

    The baseline holds the signal up to `lag` points ago (lag >= span keeps the two disjoint).
    """

    def __init__(self, baseline: int, span: int, lag: int, min_baseline: int):
        self._min_baseline = min_baseline
        self._recent: deque[float] = deque()
        self._recent_sum = 0.0
        self._span = span
        self._lag = lag
        self._delay: deque[float] = deque()
        self._baseline = RollingMoments(baseline)
        self._range = Range()

    def update(self, signal: float) -> float:
        recent = self._recent
        recent.append(signal)
        self._recent_sum += signal
        if len(recent) > self._span:
            self._recent_sum -= recent.popleft()
        z = 0.0
        if len(self._baseline) >= self._min_baseline:  # a few points make no baseline
            # a floor on the width: a flat baseline would make the first wiggle infinitely surprising
            width = max(self._baseline.std(), 1e-3 * self._range.width() + 1e-9)
            z = abs(self._recent_sum / len(recent) - self._baseline.mean()) / width
        self._delay.append(signal)
        if len(self._delay) >= self._lag:
            self._baseline.push(self._delay.popleft())
        self._range.push(signal)
        return z


class VigilDetector(Detector):
    """Spike, level-shift, daily-pattern, volatility and breakout tests, scored against their recent records."""

    name = "vigil"
    version = "7"  # 7: the breakout range covers 10 weeks; 6: the breakout test; 5: a 200-point warm-up

    def __init__(self, params: VigilParameters | None = None):
        p = self.params = params or VigilParameters()
        if p.warmup <= p.period_probe:
            raise ValueError("warmup must be longer than period_probe (memories are sized after the probe)")
        self._spike = _Deviation(p.baseline, 1, 1, p.min_baseline)
        self._shift = _Deviation(p.baseline, p.shift_span, p.shift_span, p.min_baseline)
        self._season = _Deviation(p.baseline, p.season_span, 1, p.min_baseline)
        self._volatility = _Deviation(p.baseline, 1, p.volatility_span, p.min_baseline)
        self._breakout_width = 0.0  # of the breakout test's range before the last value (explanations)
        # the least each test's record counts for; an off breakout test scores 0 against 1
        self._floors = [p.z_floor] * 4 + [p.breakout_tolerance or 1.0]
        self._history = History(WEEK_IN_DAYS * p.max_period)
        self._step_s = p.reference_interval_s  # the sampling interval, once learned
        self._size_memories(1.0)
        self._last_alarm = -p.quiet - 1
        self._steps: deque[float] = deque()
        self._steps_sum = 0.0
        self._first_times: list[datetime] = []
        self._period: int | None = None  # daily lag in points, once learned (0: not daily-sampled)
        self._count = 0

    @classmethod
    def create(cls, warmup: int | None = None, sensitivity: float | None = None) -> "VigilDetector":
        """`warmup` replaces the default warm-up (points that score 0; must exceed `period_probe`)."""
        params = VigilParameters()
        if warmup is not None and warmup <= params.period_probe:
            raise ValueError(f"the vigil detector needs a warm-up of more than {params.period_probe} points "
                             f"(it learns the sampling interval from the first {params.period_probe}), got {warmup}")
        return cls(None if warmup is None else replace(params, warmup=warmup))

    def parameters(self) -> dict:
        return {"version": self.version, **asdict(self.params)}

    @property
    def warming_up(self) -> bool:
        return self._count <= self.params.warmup  # `update` scores the first `warmup` points 0

    def explain(self) -> str:
        """The test with the largest deviation-to-record ratio at the last point, with its numbers."""
        why = getattr(self, "_why", None)
        if why is None:
            return ""
        zs, records, damped = why
        ratios = [z / r for z, r in zip(zs, records)]
        order = sorted(range(len(ratios)), key=ratios.__getitem__, reverse=True)
        k = order[0]
        names = [*_TESTS[:-1], _TESTS[-1].format(window=self._breakout_window_text())]
        if k == len(names) - 1 and not self._breakout_width:
            text = f"{names[k]}: the first move of a series flat until now"
        elif k == len(names) - 1:
            text = (f"{names[k]}: {zs[k]:.1%} of the earlier range beyond it, {ratios[k]:.2f}x the recent record "
                    f"{records[k]:.1%}")
        else:
            text = (f"{names[k]}: deviation {zs[k]:.2f} std of its baseline, {ratios[k]:.2f}x the recent record "
                    f"{records[k]:.2f}")
        also = [f"{names[j].split(' (')[0]} {ratios[j]:.2f}x" for j in order[1:] if ratios[j] >= 1.0]
        if also:
            text += f"; also {', '.join(also)}"
        if damped:
            p = self.params
            text += f" (damped x{p.quiet_factor:g}: within {self._quiet} points of the last alarm)"
        return text

    def _breakout_window_text(self) -> str:
        """' of the last 69 days': the span of time the breakout test's range covers ('' for all time)."""
        if not self.params.breakout_window:
            return ""
        span_s = self._breakout_points * self._step_s
        days = span_s / SECONDS_PER_DAY
        return f" of the last {days:.0f} days" if days >= 2 else f" of the last {span_s / 3600:.0f} hours"

    def _size_memories(self, scale: float) -> None:
        p = self.params
        self._records = [RollingMax(max(1, int(p.spike_memory * scale)))]
        self._records += [RollingMax(max(1, int(p.memory * scale))) for _ in range(3)]
        self._records.append(RollingMax(max(1, int(p.breakout_memory * scale))))
        self._quiet = max(1, int(p.quiet * scale))
        # the breakout test's range; resized at most once, while the history still holds every value
        self._breakout_points = max(1, int(p.breakout_window * scale))
        self._range = WindowRange(self._breakout_points) if p.breakout_window else Range()
        for k in range(len(self._history), 0, -1):
            self._range.push(self._history.ago(k))

    def _learn_period(self, timestamp: str) -> None:
        self._first_times.append(datetime.fromisoformat(timestamp))
        if len(self._first_times) <= self.params.period_probe:
            return
        times = self._first_times
        step = median((b - a).total_seconds() for a, b in zip(times, times[1:]))
        lag = round(SECONDS_PER_DAY / step) if step > 0 else 0
        self._period = lag if 10 < lag <= self.params.max_period else 0
        self._step_s = step if step > 0 else self._step_s
        self._first_times = []
        # still inside the warm-up, so the records hold nothing yet and can be resized
        self._size_memories(min(1.0, self.params.reference_interval_s / step) if step > 0 else 1.0)

    def _volatility_signal(self, value: float) -> float:
        history, steps = self._history, self._steps
        step = abs(value - history.ago(1)) if len(history) else 0.0
        steps.append(step)
        self._steps_sum += step
        if len(steps) > self.params.volatility_span:
            self._steps_sum -= steps.popleft()
        return self._steps_sum / len(steps)

    def _seasonal_difference(self, value: float) -> float:
        """Value minus the same time yesterday, or minus the same time last week when that is closer
        (a Monday morning is unlike Sunday's but like last Monday's)."""
        history, day = self._history, self._period
        daily = value - history.ago(day)
        if len(history) >= WEEK_IN_DAYS * day:
            weekly = value - history.ago(WEEK_IN_DAYS * day)
            if abs(weekly) < abs(daily):
                return weekly
        return daily

    def _breakout(self, value: float) -> float:
        """How far `value` lies outside the range of the earlier values (of the last `breakout_window`), as a
        fraction of its width."""
        seen = self._range
        beyond = max(0.0, value - seen.high, seen.low - value) if seen.high >= seen.low else 0.0
        width = self._breakout_width = seen.width()
        seen.push(value)
        if not (beyond and self.params.breakout_tolerance) or len(self._history) < self.params.min_baseline:
            return 0.0
        return beyond / max(width, 1e-9)  # a flat series' first move is a breakout without measure

    def update(self, timestamp: str, value: float) -> float:
        p = self.params
        if self._period is None:
            self._learn_period(timestamp)
        zs = [self._spike.update(value), self._shift.update(value), 0.0,
              self._volatility.update(self._volatility_signal(value)), self._breakout(value)]
        if self._period and len(self._history) >= self._period:
            zs[2] = self._season.update(self._seasonal_difference(value))
        self._history.push(value)
        warm = self._count >= p.warmup
        self._count += 1
        if self.explaining:
            self._why = (zs, [max(record.max(), floor) for record, floor in zip(self._records, self._floors)], False)
        ratio = 0.0
        for z, record, floor in zip(zs, self._records, self._floors):
            if warm:
                ratio = max(ratio, z / max(record.max(), floor))
            # records learn from the second half of the warm-up, so the first points after it do not
            # all look like records against an empty memory
            record.push(z if self._count > p.warmup // 2 else 0.0)
        if ratio >= 1.0:
            # alarm suppression: NAB-style scoring (and on-call engineers) reward the first alarm of an
            # episode and penalise every repeat, so for `quiet` points after an alarm only a deviation
            # of at least `escalate` times the recent record alarms again (a marginal alarm must not
            # hide a real incident right behind it)
            quiet = self._count - self._last_alarm <= self._quiet
            if quiet and ratio < p.escalate:
                ratio *= p.quiet_factor
                if self.explaining:
                    self._why = (*self._why[:2], True)
            else:
                self._last_alarm = self._count
        return ratio / (ratio + 1.0)
