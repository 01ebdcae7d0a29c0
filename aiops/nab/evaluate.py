"""Running detectors over the NAB corpus and scoring them under every profile.

Two figures per profile:

* `tuned`: one threshold per profile chosen on the whole corpus, then scored on it — what the published
  NAB scoreboard reports (it flatters every detector a little, since the threshold sees the labels);
* `holdout`: the files are split in two halves (alternating within each category, in name order); the
  threshold chosen on one half scores the other, both ways, and the two raw totals are normalised
  together over the whole corpus. No file is scored with a threshold that saw its labels.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from vigil.aiops.detect import DETECTORS, SERIES_DETECTORS, make_detector
from vigil.aiops.detect.base import Detector
from vigil.aiops.nab.corpus import NabCorpus, NabFile

#: builds a fresh detector for one corpus file
Factory = Callable[[NabFile], Detector]
from vigil.aiops.nab.scoring import ThresholdCurve, file_weights

#: our profile names -> NAB's names in config/profiles.json and published results
PROFILES = {"standard": "standard", "low_fp": "reward_low_FP_rate", "low_fn": "reward_low_FN_rate"}


@dataclass
class ProfileResult:
    tuned: float  # normalised score, threshold tuned on the whole corpus
    threshold: float
    holdout: float  # normalised score, thresholds tuned on the other half
    holdout_thresholds: tuple[float, float]
    holdout_halves: tuple[float, float]  # each half normalised alone, scored at the other half's threshold


@dataclass
class DetectorResult:
    detector: str
    parameters: dict
    seconds: float
    n_points: int
    profiles: dict[str, ProfileResult] = field(default_factory=dict)

    def as_dict(self) -> dict:
        return {
            "detector": self.detector,
            "parameters": self.parameters,
            "seconds": round(self.seconds, 3),
            "points": self.n_points,
            "profiles": {
                name: {
                    "tuned": round(p.tuned, 2),
                    "threshold": p.threshold,
                    "holdout": round(p.holdout, 2),
                    "holdout_thresholds": list(p.holdout_thresholds),
                    "holdout_halves": [round(h, 2) for h in p.holdout_halves],
                }
                for name, p in self.profiles.items()
            },
        }


def split_halves(files: list[NabFile]) -> tuple[list[int], list[int]]:
    """Indices of two halves: files alternate between halves within each category, in name order."""
    halves: tuple[list[int], list[int]] = ([], [])
    seen: dict[str, int] = {}
    for i, f in enumerate(sorted(range(len(files)), key=lambda k: files[k].name)):
        category = files[f].category
        halves[seen.get(category, 0) % 2].append(f)
        seen[category] = seen.get(category, 0) + 1
    if len(files) > 1 and not all(halves):  # one file per category (a subset): alternate over all files
        ordered = sorted(range(len(files)), key=lambda k: files[k].name)
        return ordered[0::2], ordered[1::2]
    return halves


def factory(name: str) -> Factory:
    """Detector factory by name: streaming detectors, or NAB-convention ones told each file's range."""
    if name in DETECTORS:
        return lambda f: make_detector(name)
    if name in SERIES_DETECTORS:
        return lambda f: SERIES_DETECTORS[name](f.series.values)
    raise ValueError(f"unknown detector {name!r}")


def run_detector(corpus: NabCorpus, make: Factory) -> tuple[list[np.ndarray], float]:
    """Scores of a fresh detector per file, and the seconds spent detecting."""
    started = time.perf_counter()
    scores = [make(f).score_series(f.series.timestamps, f.series.values) for f in corpus.files]
    return scores, time.perf_counter() - started


def profile_curves(corpus: NabCorpus, scores: list[np.ndarray],
                   profile: str) -> tuple[ThresholdCurve, ThresholdCurve, ThresholdCurve]:
    """Threshold curves of the whole corpus, its first half and its second half (`split_halves`) under
    one of our profiles."""
    cost = corpus.profiles[PROFILES[profile]]
    per_file = [(s, file_weights(len(s), f.windows, cost)) for s, f in zip(scores, corpus.files)]
    return (ThresholdCurve(per_file, cost),
            *(ThresholdCurve([per_file[i] for i in half], cost) for half in split_halves(corpus.files)))


def score_profiles(corpus: NabCorpus, scores: list[np.ndarray]) -> dict[str, ProfileResult]:
    """Tuned and held-out normalised scores for every profile."""
    results = {}
    for ours in PROFILES:
        whole, curve_a, curve_b = profile_curves(corpus, scores, ours)
        threshold, raw = whole.best()
        thr_a, _ = curve_a.best()
        thr_b, _ = curve_b.best()
        raw_b, raw_a = curve_b.raw_at(thr_a), curve_a.raw_at(thr_b)
        results[ours] = ProfileResult(whole.normalise(raw), threshold, whole.normalise(raw_a + raw_b), (thr_a, thr_b),
                                      (curve_a.normalise(raw_a), curve_b.normalise(raw_b)))
    return results


def evaluate(corpus: NabCorpus, make: Factory | str) -> DetectorResult:
    """Run a detector (a name or a factory) over the corpus and score it under every profile."""
    if isinstance(make, str):
        make = factory(make)
    probe = make(corpus.files[0])
    scores, seconds = run_detector(corpus, make)
    result = DetectorResult(probe.name, probe.parameters(), seconds, corpus.n_points)
    result.profiles = score_profiles(corpus, scores)
    return result
