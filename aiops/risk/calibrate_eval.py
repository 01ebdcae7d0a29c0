"""Operating points of a failure score on a held-out half: detection at a fixed false-alarm rate, lead time.

Definitions (the disk model's, docs/aiops-failure-prediction.md):

- units (GPUs, disks) are split in two halves, stratified by failure; thresholds are set on the
  training half, figures reported on the held-out half;
- false-alarm rate (FA) = share of healthy units' days whose score is above the threshold;
- detection rate = share of failing units with an alarm 1..horizon days before their failure;
- lead time = days between a detected unit's first alarm in that window and its failure (median, p10).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd
from sklearn.metrics import roc_auc_score

from vigil.aiops.disk.model import threshold_for_far

FALSE_ALARM_RATES = (0.001, 0.01)


@dataclass(frozen=True)
class OperatingPoint:
    target_false_alarm_rate: float
    threshold: float
    held_out_false_alarm_rate: float
    detection_rate: float
    median_lead_days: float | None
    p10_lead_days: float | None


@dataclass(frozen=True)
class Calibration:
    kind: str  # "gpu", "sata", "nvme"
    held_out_units: int
    held_out_failing: int
    horizon_days: int
    roc_auc: float  # held-out rows: positives within the horizon vs healthy units' rows
    points: list[OperatingPoint]
    detectable_share: float  # failing held-out units with any precursor (the ceiling of detection)

    def to_json(self) -> dict:
        return asdict(self)


def split_units(unit: np.ndarray, failed_unit: np.ndarray, seed: int) -> np.ndarray:
    """Per row: True when its unit is in the held-out half (half of the failing, half of the healthy units)."""
    rng = np.random.default_rng(seed + 17)
    unit = pd.factorize(unit, sort=True)[0]  # integer ids: np.isin on strings is very slow
    ids = np.unique(unit)
    failing = np.isin(ids, np.unique(unit[failed_unit]))
    held = np.zeros(len(ids), dtype=bool)
    for group in (np.flatnonzero(failing), np.flatnonzero(~failing)):
        held[rng.permutation(group)[: len(group) // 2]] = True
    return np.isin(unit, ids[held])


def training_labels(days_to_failure: np.ndarray, horizon: int) -> np.ndarray:
    """1 within the horizon of a failure, 0 for healthy units, NaN for a failing unit's earlier days."""
    healthy = np.isnan(days_to_failure)
    return np.where(healthy, 0.0, np.where(days_to_failure <= horizon, 1.0, np.nan))


def evaluate(kind: str, scores: np.ndarray, unit: np.ndarray, days_to_failure: np.ndarray, held_out: np.ndarray,
             horizon: int, warned_unit: np.ndarray | None = None) -> Calibration:
    """Thresholds on the training half's healthy days, figures on the held-out half."""
    unit = pd.factorize(unit, sort=True)[0]
    healthy = np.isnan(days_to_failure)
    points = []
    test_healthy = scores[held_out & healthy]
    window = held_out & ~healthy & (days_to_failure >= 1) & (days_to_failure <= horizon)
    failing_ids = np.unique(unit[held_out & ~healthy])
    for far in FALSE_ALARM_RATES:
        threshold = threshold_for_far(scores[~held_out & healthy], far)
        alarmed = window & (scores > threshold)
        leads = _first_alarm_leads(unit[alarmed], days_to_failure[alarmed])
        points.append(OperatingPoint(
            target_false_alarm_rate=far, threshold=threshold,
            held_out_false_alarm_rate=round(float(np.mean(test_healthy > threshold)), 6),
            detection_rate=round(len(leads) / len(failing_ids), 4) if len(failing_ids) else 0.0,
            median_lead_days=float(np.median(leads)) if len(leads) else None,
            p10_lead_days=float(np.percentile(leads, 10)) if len(leads) else None,
        ))
    labels = training_labels(days_to_failure, horizon)
    usable = held_out & ~np.isnan(labels)
    auc = roc_auc_score(labels[usable], scores[usable]) if len(np.unique(labels[usable])) == 2 else float("nan")
    detectable = float(np.isin(failing_ids, np.unique(unit[warned_unit]) if warned_unit is not None else failing_ids).mean()) \
        if len(failing_ids) else 0.0
    return Calibration(kind, int(len(np.unique(unit[held_out]))), int(len(failing_ids)), horizon, round(float(auc), 4),
                       points, round(detectable, 4))


def _first_alarm_leads(unit: np.ndarray, days_to_failure: np.ndarray) -> np.ndarray:
    """Per alarmed unit, the largest days-to-failure of its alarms (its first alarm's lead)."""
    if len(unit) == 0:
        return np.array([])
    order = np.lexsort((-days_to_failure, unit))
    first = np.ones(len(order), dtype=bool)
    first[1:] = unit[order][1:] != unit[order][:-1]
    return days_to_failure[order][first]
