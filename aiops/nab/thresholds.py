"""Storing tuned thresholds as the detectors' defaults (`aiops/detect/thresholds.json`)."""

from __future__ import annotations

import json
from importlib import resources

from vigil.aiops.nab.evaluate import DetectorResult


def save_thresholds(results: list[DetectorResult]) -> None:
    target = resources.files("vigil.aiops.detect").joinpath("thresholds.json")
    stored = json.loads(target.read_text(encoding="utf-8")) if target.is_file() else {}
    for r in results:
        stored[r.detector] = {
            "parameters": r.parameters,
            "tuned_on": f"NAB corpus, {r.n_points} points, whole-corpus threshold per profile",
            **{name: p.threshold for name, p in r.profiles.items()},
        }
    with resources.as_file(target) as path:
        path.write_text(json.dumps(stored, indent=2, sort_keys=True) + "\n", encoding="utf-8")
