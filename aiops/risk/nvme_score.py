"""NVMe failure risk: a logistic score over the NVMe health log the node exporter publishes.

`risk = sigmoid(bias + sum(weight * feature))` with the weights and the alarm threshold fitted by
`vigil aiops calibrate-risk` and read from `nvme_weights.json` beside this file (seed and command in it).
The features are the four health-log signals named in issue 13: critical warning, media errors (level
and 7-day growth), percentage used and available spare.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

from vigil.common.prometheus_api import PrometheusClient

WEIGHTS_FILE = Path(__file__).with_name("nvme_weights.json")
FEATURES = ("critical_warning", "media_errors", "media_errors_growth_7d", "percentage_used", "spare_used")
MAX_USED = 2.0  # percentage used above 200 % says nothing more

# signal -> PromQL with one value per (node, device)
NVME_QUERIES: dict[str, str] = {
    "critical_warning": "max by (node, device) (vigil_disk_nvme_critical_warning)",
    "media_errors": "max by (node, device) (vigil_disk_nvme_media_errors_total)",
    "media_errors_growth_7d": "max by (node, device) (increase(vigil_disk_nvme_media_errors_total[7d]))",
    "percentage_used": "max by (node, device) (vigil_disk_nvme_percentage_used_ratio)",
    "available_spare": "max by (node, device) (vigil_disk_nvme_available_spare_ratio)",
}


def load_weights(path: Path = WEIGHTS_FILE) -> dict:
    """`{"bias", "weights": {feature: w}, "threshold", ...}` as calibrated."""
    return json.loads(path.read_text())


def feature_matrix(critical_warning, media_errors, media_errors_growth_7d, percentage_used, available_spare) -> np.ndarray:
    """Rows of `FEATURES` from arrays of the raw signals (ratios as the exporter publishes them)."""
    return np.column_stack([
        (np.asarray(critical_warning, dtype=float) > 0).astype(float),
        np.log1p(np.maximum(np.asarray(media_errors, dtype=float), 0.0)),
        np.log1p(np.maximum(np.asarray(media_errors_growth_7d, dtype=float), 0.0)),
        np.clip(np.asarray(percentage_used, dtype=float), 0.0, MAX_USED),
        np.clip(1.0 - np.asarray(available_spare, dtype=float), 0.0, 1.0),
    ])


def score(features: np.ndarray, model: dict) -> np.ndarray:
    """Risk of each row of a `feature_matrix`."""
    weights = np.array([model["weights"][name] for name in FEATURES])
    return 1.0 / (1.0 + np.exp(-(model["bias"] + features @ weights)))


def read_nvme_risks(reader: PrometheusClient, model: dict) -> list[tuple[str, str, float, dict[str, float]]]:
    """`(node, device, risk, contributions)` for each NVMe disk the exporter reports."""
    signals: dict[tuple[str, str], dict[str, float]] = {}
    for name, promql in NVME_QUERIES.items():
        for labels, value in reader.query(promql):
            node, device = labels.get("node"), labels.get("device")
            if node is not None and device is not None and not math.isnan(value):
                signals.setdefault((node, device), {})[name] = value
    out = []
    for (node, device), s in sorted(signals.items()):
        row = feature_matrix(*([s.get(k, 1.0 if k == "available_spare" else 0.0)] for k in
                               ("critical_warning", "media_errors", "media_errors_growth_7d", "percentage_used", "available_spare")))
        contributions = {name: float(model["weights"][name] * v) for name, v in zip(FEATURES, row[0])}
        out.append((node, device, float(score(row, model)[0]), contributions))
    return out


def top_reason(contributions: dict[str, float]) -> str:
    """The signal that contributes most, or "none" when none raises the risk."""
    name, value = max(contributions.items(), key=lambda item: (item[1], item[0]))
    return name if value > 0 else "none"
