"""Streaming, strictly causal anomaly detectors (see `aiops.detect.base.Detector`).

`make_detector(name)` builds a fresh detector for one series; `default_threshold(name, profile)` is the
alarm threshold tuned for that detector on the NAB corpus (stored in `thresholds.json`, refreshed with
`vigil aiops evaluate nab --save-thresholds`).

Labelling (`vigil aiops detect --labels`): `alarms` are sparse, one per episode (what NAB rewards and a
pager wants); `points` labels every point of an anomalous stretch (how operations KPIs are labelled).
Some detectors come in pairs, one of each (`LABELLING_PAIRS`); `detector_for(name, labels)` picks the
member of `name`'s pair, and a detector outside the pairs labels points only.

`SERIES_DETECTORS` are reference detectors that, by NAB's convention, must be told the whole series'
minimum and maximum up front (`factory(values)`): they are not causal and serve benchmarking only.
"""

from __future__ import annotations

import json
from importlib import resources
from types import MappingProxyType

from vigil.aiops.detect.base import Detector
from vigil.aiops.detect.evt_detector import EvtAlarmDetector, EvtDetector
from vigil.aiops.detect.points import VigilPointsDetector
from vigil.aiops.detect.reference import NullDetector, WindowedGaussianDetector
from vigil.aiops.detect.relative_entropy import RelativeEntropyDetector, for_series
from vigil.aiops.detect.vigil_detector import VigilDetector

DETECTORS = MappingProxyType(
    {cls.name: cls for cls in (VigilDetector, VigilPointsDetector, EvtDetector, EvtAlarmDetector,
                               WindowedGaussianDetector, NullDetector)}
)

#: the same method twice: {"alarms": name, "points": name}
LABELLING_PAIRS = (MappingProxyType({"alarms": VigilDetector.name, "points": VigilPointsDetector.name}),
                   MappingProxyType({"alarms": EvtAlarmDetector.name, "points": EvtDetector.name}))
LABELS = ("points", "alarms")

SERIES_DETECTORS = MappingProxyType({RelativeEntropyDetector.name: for_series})

THRESHOLDS_FILE = "thresholds.json"


def make_detector(name: str, warmup: int | None = None, sensitivity: float | None = None) -> Detector:
    """A fresh detector `name`; `warmup`/`sensitivity` go to detectors that have such settings
    (`Detector.create`); a bad value raises ValueError."""
    try:
        cls = DETECTORS[name]
    except KeyError:
        raise ValueError(f"unknown detector {name!r}; choose from {', '.join(DETECTORS)}") from None
    return cls.create(warmup=warmup, sensitivity=sensitivity)


def labelling_of(name: str) -> str:
    """`alarms` or `points`: how detector `name` labels."""
    for pair in LABELLING_PAIRS:
        if pair["alarms"] == name:
            return "alarms"
    return "points"


def detector_for(name: str, labels: str | None) -> str:
    """The detector that labels like `labels` (`points`, `alarms`; None: `name` as it is) in `name`'s pair.
    ValueError for a bad `labels`, or `alarms` from a detector that labels points only."""
    if labels is None:
        return name
    if labels not in LABELS:
        raise ValueError(f"unknown labels {labels!r}; choose from {', '.join(LABELS)}")
    for pair in LABELLING_PAIRS:
        if name in pair.values():
            return pair[labels]
    if labels != labelling_of(name):
        raise ValueError(f"the {name} detector labels every point over its threshold: it has no {labels} "
                         f"(pairs: {', '.join(' / '.join(p.values()) for p in LABELLING_PAIRS)})")
    return name


def stored_thresholds() -> dict:
    """The thresholds file: detector -> {"standard": t, "low_fp": t, "low_fn": t, ...}."""
    text = resources.files(__package__).joinpath(THRESHOLDS_FILE).read_text(encoding="utf-8")
    return json.loads(text)


def default_threshold(name: str, profile: str = "standard") -> float:
    entry = stored_thresholds().get(name)
    if entry is None or profile not in entry:
        raise ValueError(f"no stored {profile} threshold for detector {name!r}; pass --threshold")
    return float(entry[profile])


__all__ = ["DETECTORS", "LABELLING_PAIRS", "LABELS", "SERIES_DETECTORS", "Detector", "default_threshold", "detector_for",
           "labelling_of", "make_detector", "stored_thresholds"]
