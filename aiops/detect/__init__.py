"""Streaming, strictly causal anomaly detectors (see `aiops.detect.base.Detector`).

`make_detector(name)` builds a fresh detector for one series; `default_threshold(name, profile)` is the
alarm threshold tuned for that detector on the NAB corpus (stored in `thresholds.json`, refreshed with
`vigil aiops evaluate nab --save-thresholds`).

`SERIES_DETECTORS` are reference detectors that, by NAB's convention, must be told the whole series'
minimum and maximum up front (`factory(values)`): they are not causal and serve benchmarking only.
"""

from __future__ import annotations

import json
from importlib import resources
from types import MappingProxyType

from vigil.aiops.detect.base import Detector
from vigil.aiops.detect.evt_detector import EvtAlarmDetector, EvtDetector
from vigil.aiops.detect.reference import NullDetector, WindowedGaussianDetector
from vigil.aiops.detect.relative_entropy import RelativeEntropyDetector, for_series
from vigil.aiops.detect.vigil_detector import VigilDetector

DETECTORS = MappingProxyType(
    {cls.name: cls for cls in (VigilDetector, EvtDetector, EvtAlarmDetector, WindowedGaussianDetector, NullDetector)}
)

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


def stored_thresholds() -> dict:
    """The thresholds file: detector -> {"standard": t, "low_fp": t, "low_fn": t, ...}."""
    text = resources.files(__package__).joinpath(THRESHOLDS_FILE).read_text(encoding="utf-8")
    return json.loads(text)


def default_threshold(name: str, profile: str = "standard") -> float:
    entry = stored_thresholds().get(name)
    if entry is None or profile not in entry:
        raise ValueError(f"no stored {profile} threshold for detector {name!r}; pass --threshold")
    return float(entry[profile])


__all__ = ["DETECTORS", "SERIES_DETECTORS", "Detector", "default_threshold", "make_detector", "stored_thresholds"]
