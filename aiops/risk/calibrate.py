"""Calibrate the failure scores on seeded simulated populations (`aiops.risk.population*`).

- GPU: a logistic regression (non-negative weights) on the six signals of `gpu_score` (same transforms, same peer temperature
  z-score), fitted on the training half of the GPUs, is the start of a search for the weights' ratios that
  detect the most failing GPUs at the operating false-alarm rate (`detection_search`); a scale and a bias
  fitted by log loss on that one score (Platt scaling) make the risk a probability. They replace the
  hand-set bias and weights.
- NVMe: a logistic regression on `nvme_score.FEATURES`, its intercept corrected from the over-sampled
  failures back to the field failure rate.
- SATA: the trained disk model (`vigil aiops train-disk`) is kept; only its alarm threshold is set, at
  0.1 % false alarms per healthy disk-day of the training half.

Each is then evaluated on the held-out half (`calibrate_eval`). `write_*` put the results into the files
the service loads, with the seed and command that produced them.
"""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.optimize import minimize
from scipy.special import expit

from vigil.aiops.risk import gpu_score, nvme_score
from vigil.aiops.risk.calibrate_eval import Calibration, evaluate, split_units, training_labels
from vigil.aiops.risk.detection_search import DetectionObjective, search_direction
from vigil.aiops.risk.population import GPU_PARAMS, GpuPopulation, simulate_gpus
from vigil.aiops.risk.population_disks import NVME_PARAMS, simulate_nvme, simulate_sata

GPU_HORIZON_DAYS = 7
NVME_HORIZON_DAYS = 20
WRITTEN_FALSE_ALARM_RATE = 0.001  # the operating point written into the model files
GPU_FEATURES = ("corrected_ecc_rate", "remap_pending", "remap_failure", "xid_92_94", "recovery_action",
                "temperature_above_peers")


def gpu_feature_matrix(pop: GpuPopulation) -> np.ndarray:
    """`GpuSignals.features()` of every row, vectorized; the temperature z-score per (node, day) as
    `gpu_score.set_peer_temperature_z` computes it."""
    frame = pd.DataFrame({"node": pop.node, "day": pop.day, "t": pop.temperature_c})
    groups = frame.groupby(["node", "day"])["t"]
    median = groups.transform("median")
    mad = (frame["t"] - median).abs().groupby([frame["node"], frame["day"]]).transform("median") * 1.4826
    peers = groups.transform("size")
    z = np.where(peers > 1, (frame["t"] - median) / np.maximum(mad, gpu_score.MIN_TEMPERATURE_SCALE_C), 0.0)
    return np.column_stack([
        np.log1p(np.maximum(pop.corrected_ecc_per_hour, 0.0)),
        (pop.remap_pending > 0).astype(float),
        (pop.remap_failure > 0).astype(float),
        np.log1p(np.maximum(pop.xid_92_94_count, 0.0)),
        (pop.recovery_action > 0).astype(float),
        np.clip(z, 0.0, gpu_score.MAX_TEMPERATURE_Z),
    ])


def _fit(features: np.ndarray, labels: np.ndarray, rows: np.ndarray, l2: float = 1e-5) -> tuple[float, np.ndarray]:
    """L2-regularized logistic regression with non-negative weights (each signal is a precursor: it may
    only raise the risk, which keeps the weights readable), fitted on standardized features with
    scipy's L-BFGS-B and returned on the raw scale."""
    usable = rows & ~np.isnan(labels)
    x, y = features[usable], labels[usable]
    mean, sd = x.mean(axis=0), np.maximum(x.std(axis=0), 1e-9)
    z = (x - mean) / sd

    def loss(theta: np.ndarray) -> tuple[float, np.ndarray]:
        logit = theta[0] + z @ theta[1:]
        p = expit(logit)
        value = np.mean(np.logaddexp(0.0, logit) - y * logit) + l2 * theta[1:] @ theta[1:]
        grad = np.concatenate([[np.mean(p - y)], z.T @ (p - y) / len(y) + 2 * l2 * theta[1:]])
        return value, grad

    bounds = [(None, None)] + [(0.0, None)] * z.shape[1]
    theta = minimize(loss, np.zeros(z.shape[1] + 1), jac=True, method="L-BFGS-B", bounds=bounds).x
    coef = theta[1:] / sd
    return float(theta[0] - coef @ mean), coef


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


def calibrate_gpu(seed: int = 0, days: int = 90, nodes: int = 2048) -> tuple[dict, Calibration]:
    """Fitted `{"bias", "weights"}` for `gpu_score` and its held-out evaluation."""
    pop = simulate_gpus(nodes=nodes, days=days, seed=seed)
    features = gpu_feature_matrix(pop)
    held_out = split_units(pop.gpu, ~np.isnan(pop.days_to_failure), seed)
    labels = training_labels(pop.days_to_failure, GPU_HORIZON_DAYS)
    _, start = _fit(features, labels, ~held_out)
    objective = DetectionObjective(features, pop.gpu, pop.days_to_failure, ~held_out, GPU_HORIZON_DAYS,
                                   WRITTEN_FALSE_ALARM_RATE)
    direction, _ = search_direction(objective, start, seed)
    # Platt scaling: a scale and a bias by log loss on the one score, so the risk is a probability again
    bias, (scale,) = _fit((features @ direction)[:, None], labels, ~held_out)
    coef = scale * direction
    scores = _sigmoid(bias + features @ coef)
    warned = np.isin(pop.gpu, np.flatnonzero(pop.precursor != "none"))
    report = evaluate("gpu", scores, pop.gpu, pop.days_to_failure, held_out, GPU_HORIZON_DAYS, warned)
    weights = {name: round(float(w), 4) for name, w in zip(GPU_FEATURES, coef)}
    return {"bias": round(bias, 4), "weights": weights, "horizon_days": GPU_HORIZON_DAYS}, report


def nvme_features(history: pd.DataFrame) -> np.ndarray:
    """`nvme_score.feature_matrix` of each row of a daily NVMe history (7-day growth within each disk)."""
    history = history.sort_values(["disk", "day"], kind="stable")
    media = history["media_errors"]
    growth = media - media.groupby(history["disk"]).shift(7).fillna(media.groupby(history["disk"]).transform("first"))
    return nvme_score.feature_matrix(history["critical_warning"], media, growth, history["percentage_used"],
                                     history["available_spare"])


def calibrate_nvme(seed: int = 0, days: int = 90, disks: int = 6000) -> tuple[dict, Calibration]:
    """Fitted NVMe `{"bias", "weights", "threshold"}` and its held-out evaluation."""
    history = simulate_nvme(disks=disks, days=days, seed=seed).sort_values(["disk", "day"], kind="stable")
    features = nvme_features(history)
    dtf = history["days_to_failure"].to_numpy()
    unit = history["disk"].to_numpy()
    held_out = split_units(unit, ~np.isnan(dtf), seed)
    bias, coef = _fit(features, training_labels(dtf, NVME_HORIZON_DAYS), ~held_out)
    # prior correction (King and Zeng 2001): from the simulated failure share to the field's
    sample = NVME_PARAMS["failure_fraction"].value
    field = -np.expm1(-NVME_PARAMS["field_afr"].value * days / 365)
    bias += float(np.log(field / (1 - field)) - np.log(sample / (1 - sample)))
    scores = _sigmoid(bias + features @ coef)
    warned = history["pattern"].isin(["media_errors", "wear_out"]).to_numpy()
    report = evaluate("nvme", scores, unit, dtf, held_out, NVME_HORIZON_DAYS, warned)
    weights = {name: round(float(w), 4) for name, w in zip(nvme_score.FEATURES, coef)}
    model = {"bias": round(bias, 4), "weights": weights, "horizon_days": NVME_HORIZON_DAYS,
             "threshold": _written_threshold(report)}
    return model, report


def calibrate_sata(disk_model, seed: int = 0, days: int = 90, disks: int = 6000) -> tuple[float, Calibration]:
    """The alarm threshold of `disk_model` (an `aiops.disk.model.DiskModel`) and its held-out evaluation."""
    from vigil.aiops.disk.features import add_features

    featured = add_features(simulate_sata(disks=disks, days=days, seed=seed))
    dtf = featured["days_to_failure"].to_numpy()
    unit = featured["disk"].to_numpy()
    held_out = split_units(unit, ~np.isnan(dtf), seed)
    scores = disk_model.score(featured)
    horizon = int(disk_model.metadata.get("horizon_days", 20))
    warned = ~featured["pattern"].isin(["healthy", "sudden"]).to_numpy()
    report = evaluate("sata", scores, unit, dtf, held_out, horizon, warned)
    return _written_threshold(report), report


def _written_threshold(report: Calibration) -> float:
    return next(p.threshold for p in report.points if p.target_false_alarm_rate == WRITTEN_FALSE_ALARM_RATE)


def _provenance(seed: int, days: int, command: str, report: Calibration) -> dict:
    return {"seed": seed, "days": days, "command": command, "held_out": report.to_json(),
            "fitted_at": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "operating_false_alarm_rate": WRITTEN_FALSE_ALARM_RATE}


def write_weights(path: Path, model: dict, seed: int, days: int, command: str, report: Calibration) -> None:
    """Write a calibrated GPU or NVMe model file (aside, then renamed into place)."""
    document = {**model, **_provenance(seed, days, command, report)}
    if report.kind == "gpu":
        document["threshold"] = _written_threshold(report)
        document["sources"] = {name: p.source for name, p in GPU_PARAMS.items()}
    partial = path.with_name(path.name + ".partial")
    partial.write_text(json.dumps(document, indent=2, sort_keys=True) + "\n")
    partial.replace(path)


def write_disk_threshold(model_dir: Path, disk_model, threshold: float, seed: int, days: int, command: str,
                         report: Calibration) -> None:
    """Save `disk_model` in `model_dir` with its calibrated threshold (the service reloads it)."""
    from vigil.aiops.disk.model import save_model

    metadata = {**disk_model.metadata, "threshold": threshold, "calibration": _provenance(seed, days, command, report)}
    save_model(replace(disk_model, threshold=threshold, metadata=metadata), model_dir)
