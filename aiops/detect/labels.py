"""From a detector's scores to the rows `vigil aiops detect` prints: labels under a threshold set from a
sensitivity, a warm-up without labels, the reason for each label, and CSV or JSON output.

Sensitivity is a number in [0, 1] (or `low` 0.25, `medium` 0.5, `high` 0.75). Detector scores are
odds-like: `vigil`'s score is r / (r + 1) where r is a point's deviation over the recent record, so a
threshold t means "flag when r >= t / (1 - t)". Sensitivity s scales those odds by 2 ** (1 - 2s): 0.5
keeps the detector's tuned threshold, 1 flags at half the odds (r >= 0.5 for `vigil`, threshold 0.333),
0 needs twice the odds (r >= 2, threshold 0.667); `high` flags at 0.71x, `low` at 1.41x. A detector
that takes a sensitivity itself (`Detector.own_sensitivity`) keeps its tuned threshold instead.
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass
from typing import Sequence

from vigil.aiops.detect.base import Detector

SENSITIVITY_LEVELS = {"low": 0.25, "medium": 0.5, "high": 0.75}


def parse_sensitivity(text: str) -> float:
    """`low`, `medium`, `high` or a number in [0, 1]; ValueError otherwise."""
    key = text.strip().lower()
    if key in SENSITIVITY_LEVELS:
        return SENSITIVITY_LEVELS[key]
    try:
        value = float(key)
    except ValueError:
        raise ValueError(f"{text!r} is not low, medium, high or a number from 0 to 1") from None
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"{text!r} is outside 0..1 (0 least sensitive, 1 most)")
    return value


def threshold_for(tuned: float, sensitivity: float) -> float:
    """The alarm threshold for `sensitivity` given the detector's `tuned` one (sensitivity 0.5).

    A tuned threshold outside (0, 1) (the null detector's 1.1: never alarm) is returned unchanged."""
    if not 0.0 < tuned < 1.0:
        return tuned
    odds = tuned / (1.0 - tuned) * 2.0 ** (1.0 - 2.0 * sensitivity)
    return odds / (1.0 + odds)


@dataclass(frozen=True)
class Labelled:
    """A scored series: per row the score, the label and (with `explain`) why it is labelled."""

    timestamps: Sequence[str]
    values: Sequence[float]
    scores: list[float]
    labels: list[int]
    reasons: list[str] | None  # None unless explanations were asked for
    warmup_rows: int = 0  # rows in the warm-up (the detector's own or --warmup): never labelled

    @property
    def flagged(self) -> int:
        return sum(self.labels)


def label_series(detector: Detector, timestamps: Sequence[str], values: Sequence[float], threshold: float,
                 warmup: int = 0, explain: bool = False) -> Labelled:
    """Score the series point by point; label 1 where score >= threshold, except in the first `warmup` rows
    (and the detector's own warm-up, which scores 0). Explanations say `warm-up` on the warm-up's rows."""
    detector.explaining = explain
    scores, labels, reasons, warm_rows = [], [], [], 0
    for i, (stamp, value) in enumerate(zip(timestamps, values)):
        score = detector.update(stamp, float(value))
        scores.append(score)
        warm = i < warmup or detector.warming_up
        warm_rows += warm
        labels.append(int(i >= warmup and score >= threshold))
        if explain:
            reasons.append(_reason(detector, i, score, threshold, warmup, warm))
    return Labelled(timestamps, values, scores, labels, reasons if explain else None, warm_rows)


def _reason(detector: Detector, i: int, score: float, threshold: float, warmup: int, warm: bool) -> str:
    reason = ""
    if score >= threshold:
        why = detector.explain()  # "" from a detector that cannot say
        reason = f"{why + '; ' if why else ''}score {_number(score)} >= threshold {_number(threshold)}"
    if i < warmup:
        return f"warm-up: not labelled, row {i + 1} is within the warm-up of {warmup} rows{': ' + reason if reason else ''}"
    if warm:
        return f"warm-up: row {i + 1} is in the {detector.name} detector's own warm-up (it learns, scores 0)"
    return reason


def _number(x: float) -> str:
    """A score or threshold, readable also where it sits a hair below 1 (windowed-gaussian: 1 - 2.3e-13)."""
    return f"1 - {1.0 - x:.2g}" if 0.9995 <= x < 1.0 else f"{x:.3f}"


def to_csv(result: Labelled) -> str:
    """`timestamp,value,anomaly_score,label` (and `explanation` when explained), one line per row."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    header = ["timestamp", "value", "anomaly_score", "label"]
    writer.writerow(header + ["explanation"] if result.reasons is not None else header)
    reasons = result.reasons
    for i, (stamp, value, score, label) in enumerate(zip(result.timestamps, result.values, result.scores,
                                                         result.labels)):
        row = [stamp, f"{value:.12g}", f"{score:.6f}", label]
        writer.writerow(row + [reasons[i]] if reasons is not None else row)
    return out.getvalue()


def to_json(result: Labelled, meta: dict) -> str:
    """One JSON document: `meta` (file, detector, threshold, ...), `flagged`, and `rows`."""
    rows = []
    for i, (stamp, value, score, label) in enumerate(zip(result.timestamps, result.values, result.scores,
                                                         result.labels)):
        row = {"timestamp": stamp, "value": float(value), "anomaly_score": round(score, 6), "label": label}
        if result.reasons is not None:
            row["explanation"] = result.reasons[i] or None
        rows.append(row)
    head = json.dumps({**meta, "rows_scored": len(rows), "flagged": result.flagged,
                       "warmup_rows": result.warmup_rows}, indent=1)  # ends "\n}"
    body = ",\n  ".join(json.dumps(row) for row in rows)  # one row per line: large series stay readable
    return f'{head[:-2]},\n "rows": [\n  {body}\n ]\n}}\n'
