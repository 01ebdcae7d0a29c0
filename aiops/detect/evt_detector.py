"""`evt`: a streaming detector for operations KPIs — fluctuations after smoothing, thresholds from
extreme value theory (in the spirit of FluxEV, WSDM'21, and SPOT, KDD'17). Dense labels: every point
of an anomalous stretch is flagged, not one alarm per episode.

1. **Warm-up** (`warmup_s`, two days by default, between `min_warmup` and `max_warmup` points): points
   score 0 and are kept. At its end the baseline classifier (`aiops.baseline.classify`) names the
   curve class — periodic, stable, or unstable (its spiky, trending and level-shift classes) — and a
   periodic curve gets a time-of-day profile (`aiops.baseline.seasonal`), refitted every day on the
   last `season_days` days of normal values.
2. **Fluctuation**: the value minus its prediction — the profile (times a level when the profile is
   positive: traffic scales; plus a level otherwise), or the level alone for stable and unstable
   curves — divided by an EWMA of past absolute fluctuations (the local noise scale): `z`. The level
   is Holt's: an EWMA of past normal values (rate per class: `alpha_*`) plus a slowly learned trend
   (rate `beta`), so a slow ramp of the normal (a weekend easing in) is followed without lag.
3. **Three signals** of `z`: `spike` |z| (spikes and dips), `shift` |EWMA of z| (level shifts, ramps,
   sustained dips; rate `shift_alpha`) and `variance` EWMA of z² (noise bursts; rate `variance_alpha`).
   The EWMAs take z clipped to ±`clip`, so one spike does not pass for a shift or a noise burst. The
   variance and shift signals label only points with |z| >= `variance_gate` (and the shift signal only
   points on its side of the prediction, `shift_gate`), so an EWMA's decaying tail after an anomaly does
   not label the calm points that follow (an unlabelled point is learned, which also lets the level
   follow a normal drift that set off the flags). The tail lasts about 15 points (a 4-sigma shift
   leaves the variance EWMA at 16); a gate of 1 sigma keeps two thirds of those points unlabelled.
4. **Thresholds**: one `Spot` per signal, calibrated on the warm-up's signals and updated while
   streaming, each at risk `q` (the chance that a normal point exceeds it). A point is flagged when a
   signal exceeds its threshold; a missing value (NaN) is flagged as `missing`.
5. **Labelled points are not learned**: while flagged, the level, the noise scale, the profile's history and
   the thresholds keep their pre-anomaly state, so a level shift stays flagged for as long as it lasts.
   After `max_hold_s` seconds of consecutive flagged points the new state is accepted as normal (a permanent change).
   A stretch ends sooner when the held level is seen to be stale (`aiops.detect.evt_hold`): it changed
   sides of the prediction, or its values came back to a level learned in the last `return_hours`.

Score: the largest signal/threshold ratio `r`, mapped to r / (1 + r): above 0.5 exactly when flagged.
`sensitivity` in [0, 1] sets the risk: q = 10 ** (-6 + 4 * sensitivity), i.e. 0 -> 1e-6, 0.5 -> 1e-4,
1 -> 1e-2 (expected false flags per normal point).
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import asdict, dataclass, replace
from statistics import median

import numpy as np

from vigil.aiops.baseline.classify import classify
from vigil.aiops.baseline.robust import DAY_S, robust_sigma
from vigil.aiops.baseline.seasonal import seasonal_fit
from vigil.aiops.detect.base import Detector, check_warmup
from vigil.aiops.detect.evt import Spot
from vigil.aiops.detect.evt_hold import HeldStretch
from vigil.common.times import parse_time

SIGNALS = ("spike", "shift", "variance")
ABS_TO_SIGMA = math.sqrt(math.pi / 2)  # E|N(0, s)| * sqrt(pi / 2) = s


def risk_from_sensitivity(sensitivity: float) -> float:
    """Risk q (expected false flags per normal point) for a sensitivity in [0, 1]."""
    if not 0.0 <= sensitivity <= 1.0:
        raise ValueError(f"sensitivity must be in [0, 1], got {sensitivity}")
    return 10.0 ** (-6.0 + 4.0 * sensitivity)


def curve_class(kind: str) -> str:
    """The baseline classifier's class folded into periodic / stable / unstable."""
    return kind if kind in ("periodic", "stable") else "unstable"


@dataclass(frozen=True)
class EvtParameters:
    risk: float = 1e-4
    warmup_s: float = 2.5 * DAY_S
    warmup: int | None = None  # points; when set, replaces warmup_s and its bounds
    min_warmup: int = 200
    max_warmup: int = 4000
    init_level: float = 0.98  # SPOT's initial threshold: this quantile of the warm-up's signals
    alpha_periodic: float = 0.01
    alpha_stable: float = 0.01
    alpha_unstable: float = 0.02
    beta: float = 0.02  # Holt trend rate: the level follows a slow ramp (a weekend easing in) without lag
    scale_alpha: float = 0.005
    shift_alpha: float = 0.2
    # fast: it passes its threshold within the 7-point delay after a shift or ramp starts, and forgets an
    # anomaly a few points after it ends (chosen on the tune half among 0.1 to 0.8)
    variance_alpha: float = 0.5
    # the variance and shift signals label only points with |z| at least this: after an anomaly their
    # EWMAs decay for a while (the shift EWMA ~15 points), and calm points in that tail are not labelled
    variance_gate: float = 1.0
    shift_gate: bool = True  # and the shift signal, too, only points on the shift's side of the prediction
    clip: float = 4.0  # z is clipped to ±clip before the shift and variance EWMAs: one spike is not a shift
    max_hold_s: float = 6 * 3600.0  # a change flagged this long becomes the new normal
    # a stretch ends earlier when it changes sides, or returns to a level of the last hours (evt_hold.py)
    flip_points: int = 15
    return_points: int = 15
    return_hours: int = 12
    return_near: float = 1.0  # noise units
    return_far: float = 3.0
    season_days: int = 7
    period_probe: int = 20  # intervals used to learn the sampling step

    @classmethod
    def for_sensitivity(cls, sensitivity: float, **overrides) -> "EvtParameters":
        return replace(cls(**overrides), risk=risk_from_sensitivity(sensitivity))


class EvtDetector(Detector):
    """Per-class fluctuation extraction with SPOT thresholds; see the module docstring."""

    name = "evt"
    version = "2"  # 2: variance EWMA rate 0.5, early ends of a held stretch (evt_hold.py)
    own_sensitivity = True  # `sensitivity` sets the EVT risk, not a cut on the score
    onset_only = False  # dense labels; `EvtAlarmDetector` scores only the first point of a stretch

    @classmethod
    def create(cls, warmup: int | None = None, sensitivity: float | None = None) -> "EvtDetector":
        """`warmup`: points before the first label (more than `period_probe`); `sensitivity` in [0, 1]."""
        params = EvtParameters() if sensitivity is None else EvtParameters.for_sensitivity(sensitivity)
        return cls(replace(params, warmup=warmup))

    def __init__(self, params: EvtParameters | None = None):
        p = self.params = params or EvtParameters()
        check_warmup("evt", p.warmup, p.period_probe)
        self._times: list[float] = []
        self._values: list[float] = []
        self._warmup: int | None = None
        self.kind: str | None = None  # curve class, known after the warm-up
        self.reason = ""  # why the last point was flagged ("" when it was not)
        self._count = 0

    def parameters(self) -> dict:
        return {"version": self.version, **asdict(self.params)}

    def explain(self) -> str:
        """Why the last point was flagged: the signal, its value and threshold, the risk; "" if it was not."""
        return self.reason

    @property
    def warming_up(self) -> bool:
        # the warm-up's points (up to and with the one that completes it) score 0 while `kind` is unknown
        return self.kind is None or self._count <= (self._warmup or 0)

    # -- warm-up -------------------------------------------------------------------------------------
    def _warmup_length(self) -> int:
        p = self.params
        times = self._times[: p.period_probe + 1]
        step = median(b - a for a, b in zip(times, times[1:]))
        self._step = step if step > 0 else 60.0
        if p.warmup is not None:
            return p.warmup
        return min(max(int(p.warmup_s / self._step), p.min_warmup), p.max_warmup)

    def _start(self) -> None:
        p = self.params
        t, x = np.asarray(self._times), np.asarray(self._values)
        if np.isfinite(x).sum() < 3:  # nothing to learn from yet: the warm-up goes on
            return
        self.kind = curve_class(classify(t, x, self._step).kind)
        self._alpha = {"periodic": p.alpha_periodic, "stable": p.alpha_stable}.get(self.kind, p.alpha_unstable)
        self._profile = None
        self._stretch = HeldStretch(p.flip_points, p.return_points, p.return_hours, int(3600 / self._step),
                                    p.return_near, p.return_far)
        self._history: deque[tuple[float, float]] = deque(maxlen=max(int(p.season_days * DAY_S / self._step), 1))
        finite = np.isfinite(x)
        t, x = t[finite], x[finite]
        if self.kind == "periodic":
            self._history.extend(zip(t.tolist(), x.tolist()))
            self._refit_profile()
        base = self._profile.expected(t) if self._profile is not None else np.zeros(x.size)
        # a positive daily profile scales (traffic: a quieter weekend is the same day, lower); otherwise it adds
        self._scales = self._profile is not None and bool(np.min(self._profile.profile) > 0)
        head = slice(0, max(10, x.size // 20))
        start = (float(np.median(x[head] / base[head] if self._scales else x[head] - base[head])),
                 max(robust_sigma(np.diff(x - base)) / math.sqrt(2.0), 1e-9 * max(float(np.abs(x).max()), 1.0)))
        self._hold = 0
        self._max_hold = max(1, int(p.max_hold_s / self._step))
        self._spots = self._calibrate(x, base, start)
        self._times, self._values = [], []

    def _calibrate(self, x: np.ndarray, base: np.ndarray, start: tuple[float, float]) -> list[Spot]:
        """Replay the warm-up from `start` (level, scale) and fit one Spot per signal to its signals."""
        self._level, self._scale = start
        self._trend = 0.0
        self._shift, self._variance = 0.0, 1.0
        calibration = []
        for value, b in zip(x.tolist(), base.tolist()):
            calibration.append(self._signals(value, b))
            self._learn(value, b)
        signals = np.asarray(calibration[min(len(calibration) // 4, 100):])
        spots = []
        for column in range(len(SIGNALS)):
            spot = Spot(self.params.risk, self.params.init_level)
            spot.fit(signals[:, column])
            spots.append(spot)
        return spots

    # -- seasonal profile ----------------------------------------------------------------------------
    def _refit_profile(self) -> None:
        self._stretch.forget_levels()
        t, x = (np.asarray(c) for c in zip(*self._history))
        self._profile = seasonal_fit(t, x, self._step, weekly=False)
        if getattr(self, "_scales", False):  # a scaling profile stays positive (a refit over a dead stretch can hold 0)
            profile = self._profile.profile
            np.maximum(profile, 1e-3 * max(float(profile.max()), 1e-6), out=profile)
        self._next_refit = t[-1] + DAY_S

    def _base(self, t: float) -> float:
        prof = self._profile
        return float(prof.profile[min(int((t % DAY_S) // prof.bin_s), prof.profile.size - 1)])

    def _observed_level(self, value: float, base: float) -> float:
        return value / base if self._scales else value - base  # base > 0 whenever the profile scales

    def _predict(self, base: float) -> float:
        level = self._level + self._trend
        return level * base if self._scales else level + base

    # -- streaming -----------------------------------------------------------------------------------
    def _signals(self, value: float, base: float) -> tuple[float, float, float]:
        """The three signals of `value` (its profile value `base`); updates the shift and variance EWMAs."""
        p = self.params
        z = (value - self._predict(base)) / self._scale
        c = min(max(z, -self.params.clip), self.params.clip)
        self._shift += p.shift_alpha * (c - self._shift)
        self._variance += p.variance_alpha * (c * c - self._variance)
        return abs(z), abs(self._shift), self._variance

    def _learn(self, value: float, base: float) -> None:
        """A normal value moves the level and the noise scale."""
        f = value - self._predict(base)
        before = self._level
        self._level += self._trend + self._alpha * (self._observed_level(value, base) - self._level - self._trend)
        self._trend += self.params.beta * (self._level - before - self._trend)
        self._scale += self.params.scale_alpha * (abs(f) * ABS_TO_SIGMA - self._scale)

    def update(self, timestamp: str, value: float) -> float:
        self._count += 1
        self.reason = ""
        if self.kind is None:
            self._times.append(parse_time(timestamp))
            self._values.append(value)
            if self._warmup is None and len(self._times) > self.params.period_probe:
                self._warmup = self._warmup_length()
            if self._warmup is not None and len(self._times) >= self._warmup:
                self._start()
            return 0.0
        if not math.isfinite(value):
            self.reason = "missing: no value"
            return 1.0
        t, base = None, 0.0
        if self._profile is not None:
            t = parse_time(timestamp)
            if t >= self._next_refit:
                self._refit_profile()
            base = self._base(t)
        predicted, scale = self._predict(base), self._scale
        signals = self._signals(value, base)
        ratios = [s / spot.threshold if spot.threshold > 0 else math.inf for s, spot in zip(signals, self._spots)]
        if signals[0] < self.params.variance_gate:
            # a calm point is not labelled for the noise or the shift around it (an EWMA's decaying tail)
            ratios[2] = 0.0
            if self.params.shift_gate:
                ratios[1] = 0.0
        if self.params.shift_gate and (value - predicted) * self._shift < 0:
            ratios[1] = 0.0  # nor a point on the other side of the prediction from the shift
        worst = max(range(len(SIGNALS)), key=ratios.__getitem__)
        anomalous = ratios[worst] > 1.0  # a labelled point is not learned; every other point is
        released = None  # the level to take up when a flagged stretch turns out to be over
        if anomalous:
            self._stretch.flagged((value - predicted) / scale, self._observed_level(value, base))
            released = self._stretch.release_level(self._level + self._trend,
                                                   scale / abs(base) if self._scales else scale)
        if anomalous and released is None and self._hold < self._max_hold:
            self._hold += 1
            self.reason = (f"{SIGNALS[worst]}: {signals[worst]:.3g} > threshold {self._spots[worst].threshold:.3g} "
                           f"(risk {self.params.risk:g}, {self.kind} curve, expected {predicted:.6g} ± {scale:.3g})")
            if t is not None:
                self._history.append((t, predicted))
        else:
            if anomalous:  # released, or flagged for max_hold_s: a permanent change, the new normal
                self._level = self._observed_level(value, base) if released is None else released
                self._trend, self._shift, self._variance = 0.0, 0.0, 1.0
            self._hold = 0
            self._learn(value, base)
            self._stretch.learned(self._level + self._trend)
            for s, spot in zip(signals, self._spots):
                spot.learn(s)
            if t is not None:
                self._history.append((t, value))
        ratio = ratios[worst]
        if self.onset_only and self._hold > 1:
            return 0.0  # alarm mode: a stretch raises one alarm, at its first point
        return 1.0 if math.isinf(ratio) else ratio / (1.0 + ratio)


class EvtAlarmDetector(EvtDetector):
    """The same detector in sparse-alarm mode (NAB's): the points after the first of a flagged stretch
    score 0, so an episode raises one alarm instead of a label per point."""

    name = "evt-alarms"
    onset_only = True
