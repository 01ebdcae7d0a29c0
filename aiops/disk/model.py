"""Train, evaluate, save and load the disk failure model.

Definitions (also in docs/aiops-failure-prediction.md):

- a failing disk's rows within `horizon_days` of its failure are positives; its earlier rows are left
  out of training (they are neither clearly healthy nor clearly failing); healthy disks' rows are negatives;
- disks (not rows) are split into train / validation / test, so no disk is seen on both sides;
- the alarm threshold is set on the validation disks so that 0.1 % of healthy disk-days alarm
  (false-alarm rate per disk-day);
- on the test disks: detection rate = share of failing disks with an alarm 1..horizon days before
  failure; lead time = days between the first such alarm and the failure.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path

import joblib
import numpy as np
import pandas as pd
import sklearn
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.metrics import roc_auc_score
from threadpoolctl import threadpool_limits  # installed with scikit-learn

from vigil.aiops.disk import METADATA_FILE, MODEL_FILE
from vigil.aiops.disk.features import add_features, feature_names



@dataclass(frozen=True)
class TrainingConfig:
    horizon_days: int = 20
    false_alarm_rate: float = 0.001
    test_fraction: float = 0.2
    validation_fraction: float = 0.2
    seed: int = 0
    # OpenMP threads for fitting/scoring. 1 by default: on a small shared machine the threads of
    # HistGradientBoosting spin-wait on each other (measured on 2 busy cores: 1.8 s with 1 thread,
    # 24 s with 2, for the same fit)
    threads: int = 1


@dataclass(frozen=True)
class Evaluation:
    """Figures on held-out disks."""

    test_disks: int
    test_failing_disks: int
    detection_rate: float
    false_alarm_rate_disk_days: float
    false_alarm_rate_disks: float
    median_lead_days: float | None
    detection_rate_at_test_far: float  # threshold set on the test disks' healthy days (ROC point)
    median_lead_days_at_test_far: float | None
    roc_auc_disk_days: float
    detection_by_pattern: dict[str, float]


@dataclass
class DiskModel:
    """A fitted classifier with its features and alarm threshold."""

    classifier: HistGradientBoostingClassifier
    features: list[str]
    threshold: float
    metadata: dict

    def score(self, featured: pd.DataFrame, threads: int = 1) -> np.ndarray:
        """Failure probability within the horizon for each featured row."""
        with threadpool_limits(limits=threads):
            return self.classifier.predict_proba(featured[self.features].to_numpy(dtype=float))[:, 1]


def label_rows(history: pd.DataFrame, horizon_days: int) -> pd.DataFrame:
    """Add `days_to_failure` (NaN for healthy disks) and `target` (1, 0, or NaN = not for training)."""
    if "failure" not in history.columns:
        raise ValueError("labelled history needs a `failure` column (1 on a disk's failure day)")
    df = history.copy()
    fail_day = df.loc[df["failure"] == 1].groupby("disk")["day"].min()
    df["days_to_failure"] = df["disk"].map(fail_day) - df["day"]
    df.loc[df["days_to_failure"] < 0, "days_to_failure"] = np.nan  # rows after a failure: replaced disk
    failing = df["disk"].isin(fail_day.index)
    df["target"] = np.where(~failing, 0.0, np.where(df["days_to_failure"] <= horizon_days, 1.0, np.nan))
    return df


def split_disks(history: pd.DataFrame, config: TrainingConfig) -> tuple[set, set, set]:
    """Disk ids for train, validation and test, stratified by whether the disk fails."""
    rng = np.random.default_rng(config.seed)
    failing = set(history.loc[history["failure"] == 1, "disk"])
    parts: tuple[set, set, set] = (set(), set(), set())
    for group in (sorted(failing), sorted(set(history["disk"]) - failing)):
        order = rng.permutation(len(group))
        n_test = int(round(len(group) * config.test_fraction))
        n_val = int(round(len(group) * config.validation_fraction))
        for rank, index in enumerate(order):
            bucket = 2 if rank < n_test else 1 if rank < n_test + n_val else 0
            parts[bucket].add(group[index])
    return parts


def train_disk_model(history: pd.DataFrame, config: TrainingConfig = TrainingConfig()) -> tuple[DiskModel, Evaluation]:
    """Fit on the training disks, set the threshold on validation disks, evaluate on test disks."""
    featured = label_rows(add_features(history), config.horizon_days)
    train_ids, val_ids, test_ids = split_disks(featured, config)
    if not featured.loc[featured["disk"].isin(train_ids), "failure"].any():
        raise ValueError("the training disks contain no failure: need more disks or more failures")
    names = feature_names()
    late = label_rows(add_features(late_start_copies(history[history["disk"].isin(train_ids)], config)), config.horizon_days)
    model = fit_classifier(pd.concat([featured[featured["disk"].isin(train_ids)], late]), names, config.seed, config.threads)
    val = featured[featured["disk"].isin(val_ids)]
    healthy_val = val[val["days_to_failure"].isna()]
    threshold = threshold_for_far(model.score(healthy_val), config.false_alarm_rate)
    model.threshold = threshold
    evaluation = evaluate(model, featured[featured["disk"].isin(test_ids)], config.horizon_days, config.false_alarm_rate)
    model.metadata = {
        "model": "HistGradientBoostingClassifier",
        "features": names,
        "threshold": threshold,
        "target_false_alarm_rate_per_disk_day": config.false_alarm_rate,
        "horizon_days": config.horizon_days,
        "trained_at": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "training_disks": len(train_ids),
        "validation_disks": len(val_ids),
        "sklearn_version": sklearn.__version__,
        "metrics": asdict(evaluation),
    }
    return model, evaluation


def late_start_copies(train_history: pd.DataFrame, config: TrainingConfig) -> pd.DataFrame:
    """Copies of training disks whose history starts late, as if monitoring began on a random day.

    The served model often sees short histories (a fresh Prometheus, a new node): a disk already
    full of pending sectors but with no growth visible yet. Every failing training disk gets a copy
    starting within its last 30 days, and one healthy disk in five a copy starting anywhere, so the
    model also learns from levels without growth. Copies are of training disks only (ids suffixed
    `#late`), so nothing crosses the split.
    """
    rng = np.random.default_rng(config.seed + 1)
    failing = set(train_history.loc[train_history["failure"] == 1, "disk"])
    lengths = train_history.groupby("disk")["day"].agg(["min", "max"])
    starts = {}
    for disk, (first, last) in lengths.iterrows():
        if disk in failing:
            starts[disk] = int(rng.integers(max(first, last - 30), last + 1))
        elif rng.random() < 0.2:
            starts[disk] = int(rng.integers(first, last + 1))
    start = train_history["disk"].map(starts)
    copies = train_history[start.notna() & (train_history["day"] >= start)].copy()
    copies["disk"] = copies["disk"] + "#late"
    return copies


def fit_classifier(rows: pd.DataFrame, features: list[str], seed: int = 0, threads: int = 1) -> DiskModel:
    """Fit a gradient-boosting classifier on the labelled rows (target not NaN) of `rows`."""
    usable = rows[rows["target"].notna()]
    positives = float(usable["target"].sum())
    if positives == 0:
        raise ValueError("no positive rows to learn from")
    # Positives are a few hundred rows among hundreds of thousands: weight them up so the trees see them.
    weight = np.where(usable["target"] == 1, (len(usable) - positives) / positives / 10, 1.0)
    classifier = HistGradientBoostingClassifier(
        max_iter=150, learning_rate=0.1, max_leaf_nodes=15, l2_regularization=1.0, random_state=seed
    )
    with threadpool_limits(limits=threads):
        classifier.fit(usable[features].to_numpy(dtype=float), usable["target"].to_numpy(), sample_weight=weight)
    return DiskModel(classifier, list(features), threshold=1.0, metadata={})


def threshold_for_far(healthy_scores: np.ndarray, false_alarm_rate: float) -> float:
    """The smallest threshold such that at most `false_alarm_rate` of healthy scores exceed it."""
    if len(healthy_scores) == 0:
        raise ValueError("no healthy disk-days to set the alarm threshold on")
    allowed = int(np.floor(false_alarm_rate * len(healthy_scores)))
    if allowed >= len(healthy_scores):
        return 0.0
    kth = len(healthy_scores) - 1 - allowed  # the allowed-th largest, by partition (no full sort)
    return float(np.partition(np.asarray(healthy_scores), kth)[kth])


def evaluate(model: DiskModel, featured_test: pd.DataFrame, horizon_days: int, false_alarm_rate: float = 0.001) -> Evaluation:
    """Detection rate, false-alarm rates and lead time of `model` on labelled, featured test rows.

    Two operating points: the model's own threshold (set on validation disks: what a deployment
    gets) and a threshold set on these test disks' healthy days at exactly `false_alarm_rate` (the
    ROC point, as papers report it; not achievable without knowing the test labels).
    """
    df = featured_test.assign(score=model.score(featured_test))
    failing_ids = set(df.loc[df["failure"] == 1, "disk"])
    healthy = df[~df["disk"].isin(failing_ids)]
    failing = df[df["disk"].isin(failing_ids)]
    in_window = failing[(failing["days_to_failure"] >= 1) & (failing["days_to_failure"] <= horizon_days)]
    alarmed = healthy["score"] > model.threshold
    lead = _first_alarm_lead(in_window, model.threshold)
    test_threshold = threshold_for_far(healthy["score"].to_numpy(), false_alarm_rate) if len(healthy) else 1.0
    lead_at_far = _first_alarm_lead(in_window, test_threshold)
    n_failing = len(failing_ids)
    by_pattern = {}
    if "pattern" in failing.columns:
        for pattern, disks in failing.groupby("pattern")["disk"]:
            ids = set(disks)
            by_pattern[str(pattern)] = round(len(ids & set(lead.index)) / len(ids), 4)
    labelled = df[df["target"].notna()]
    auc = roc_auc_score(labelled["target"], labelled["score"]) if labelled["target"].nunique() == 2 else float("nan")
    return Evaluation(
        test_disks=int(df["disk"].nunique()),
        test_failing_disks=int(n_failing),
        detection_rate=round(len(lead) / n_failing, 4) if n_failing else 0.0,
        false_alarm_rate_disk_days=round(float(alarmed.mean()), 6) if len(healthy) else 0.0,
        false_alarm_rate_disks=round(float(alarmed.groupby(healthy["disk"]).any().mean()), 4) if len(healthy) else 0.0,
        median_lead_days=float(lead.median()) if len(lead) else None,
        detection_rate_at_test_far=round(len(lead_at_far) / n_failing, 4) if n_failing else 0.0,
        median_lead_days_at_test_far=float(lead_at_far.median()) if len(lead_at_far) else None,
        roc_auc_disk_days=round(float(auc), 4),
        detection_by_pattern=by_pattern,
    )


def _first_alarm_lead(in_window: pd.DataFrame, threshold: float) -> pd.Series:
    """Per detected failing disk: days between its first alarm in the window and the failure."""
    return in_window[in_window["score"] > threshold].groupby("disk")["days_to_failure"].max()


def save_model(model: DiskModel, model_dir: Path) -> None:
    """Write the classifier (joblib) and its metadata (JSON) into `model_dir`.

    Each file is written aside and renamed into place, so a running `serve` that reloads the model
    never reads half a file.
    """
    model_dir.mkdir(parents=True, exist_ok=True)
    saved = {"classifier": model.classifier, "features": model.features, "threshold": model.threshold}
    partial = model_dir / (MODEL_FILE + ".partial")
    joblib.dump(saved, partial)
    meta_partial = model_dir / (METADATA_FILE + ".partial")
    meta_partial.write_text(json.dumps(model.metadata, indent=2, sort_keys=True) + "\n")
    meta_partial.replace(model_dir / METADATA_FILE)
    partial.replace(model_dir / MODEL_FILE)  # last: the collector reloads when this file changes


def load_model(model_dir: Path) -> DiskModel | None:
    """The disk model saved in `model_dir`, or None when there is none."""
    path = model_dir / MODEL_FILE
    if not path.exists():
        return None
    saved = joblib.load(path)
    meta_path = model_dir / METADATA_FILE
    metadata = json.loads(meta_path.read_text()) if meta_path.exists() else {}
    return DiskModel(saved["classifier"], saved["features"], float(saved["threshold"]), metadata)
