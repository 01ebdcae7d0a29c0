"""The prometheus_client collector that exports GPU and disk failure risk.

Prometheus is queried on a background thread every `interval_s` (never during a scrape); `collect()`
only renders the last snapshot, so a slow or unreachable Prometheus never slows the scrape.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from prometheus_client.core import GaugeMetricFamily, Metric

from vigil.aiops.disk import MODEL_FILE
from vigil.aiops.risk.gpu_score import THRESHOLD as GPU_THRESHOLD, score_gpus
from vigil.aiops.risk.gpu_signals import read_gpu_signals
from vigil.common.prometheus_api import PrometheusClient, PrometheusUnavailable

log = logging.getLogger(__name__)
# exported risks, reasons and thresholds share one precision, so the alert's `risk > threshold` compares
# the very numbers a user reads off the scrape
_DIGITS = 6


@dataclass(frozen=True)
class RiskSample:
    """One exported risk: `target` is ("gpu", index) or ("device", name). `model` scored it ("gpu", "sata",
    "nvme") and alarms above `threshold` (disks only: each disk carries its model's threshold)."""

    kind: str  # "gpu" | "disk"
    node: str
    target: tuple[str, str]
    risk: float
    reasons: dict[str, float] = field(default_factory=dict)
    model: str = "gpu"
    threshold: float | None = None


class FailureRiskCollector:
    """Exports `vigil_failure_risk{kind,node,gpu|device}`, `vigil_failure_risk_reason{...,reason}` and the
    alarm threshold each model is operated at, `vigil_failure_risk_threshold` (see `collect`)."""

    def __init__(self, reader: PrometheusClient, model_dir: Path, interval_s: float = 60.0, xid_window: str = "7d"):
        self._reader = reader
        self._model_dir = Path(model_dir)
        self._interval_s = interval_s
        self._xid_window = xid_window
        self._lock = threading.Lock()
        self._samples: list[RiskSample] = []
        self._up = 0.0
        self._last_success = 0.0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._disk_model = None
        self._disk_model_stamp: int | None = -1  # mtime of the loaded model file; -1 = never looked

    # -- refresh (background) -------------------------------------------------------------------
    def refresh(self) -> bool:
        """Query Prometheus once and replace the snapshot; False (and a log line) when it fails."""
        try:
            samples = self._gpu_samples() + self._disk_samples() + self._nvme_samples()
        except PrometheusUnavailable as exc:
            log.warning("failure risk not refreshed: %s", exc)
            with self._lock:
                self._up = 0.0
            return False
        with self._lock:
            self._samples, self._up, self._last_success = samples, 1.0, time.time()
        return True

    def _gpu_samples(self) -> list[RiskSample]:
        risks = score_gpus(read_gpu_signals(self._reader, self._xid_window))
        return [RiskSample("gpu", r.node, ("gpu", r.gpu), r.risk, r.contributions) for r in risks]

    def _disk_samples(self) -> list[RiskSample]:
        model = self._load_disk_model()
        if model is None:
            return []
        from vigil.aiops.risk.disk_signals import read_smart_history, score_disks

        history = read_smart_history(self._reader, now=time.time())
        return [
            RiskSample("disk", node, ("device", device), risk, {reason: 1.0}, "sata", model.threshold)
            for node, device, risk, reason in score_disks(model, history)
        ]

    def _nvme_samples(self) -> list[RiskSample]:
        """NVMe disks, scored with the calibrated weights of `nvme_weights.json`; the reason is the signal
        with the largest contribution (value 1, one series per disk, as for the other disks)."""
        from vigil.aiops.risk.nvme_score import load_weights, read_nvme_risks, top_reason

        weights = load_weights()
        return [RiskSample("disk", node, ("device", device), risk, {top_reason(terms): 1.0}, "nvme",
                           float(weights["threshold"]))
                for node, device, risk, terms in read_nvme_risks(self._reader, weights)]

    def _load_disk_model(self):
        """The disk model of the model dir, reloaded when `train-disk` rewrites it (file mtime)."""
        path = self._model_dir / MODEL_FILE
        stamp = path.stat().st_mtime_ns if path.exists() else None
        if stamp == self._disk_model_stamp:
            return self._disk_model
        self._disk_model_stamp, self._disk_model = stamp, None
        if stamp is None:
            log.info("no disk model in %s: disk failure risk is not exported", self._model_dir)
            return None
        try:
            from vigil.aiops.disk.model import load_model  # imported here: scikit-learn takes seconds to import

            self._disk_model = load_model(self._model_dir)
            log.info("loaded the disk model from %s", path)
        except Exception as exc:  # a corrupt or incompatible file must not stop the GPU risk
            log.error("cannot load the disk model from %s (disk risk not exported): %s", self._model_dir, exc)
        return self._disk_model

    def start(self) -> "FailureRiskCollector":
        """Refresh now and then every `interval_s` on a daemon thread."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="vigil-failure-risk", daemon=True)
            self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.refresh()
            except Exception:  # keep the thread alive whatever one refresh hits; say what it was
                log.exception("failure risk refresh failed")
            self._stop.wait(self._interval_s)

    # -- scrape ---------------------------------------------------------------------------------
    def collect(self):
        with self._lock:
            samples, up, last = list(self._samples), self._up, self._last_success
        risk = Metric("vigil_failure_risk", "Estimated failure risk (0-1) of a GPU or disk", "gauge")
        reason = Metric(
            "vigil_failure_risk_reason",
            "Contribution of one signal to the failure risk (GPU: logit term; disk: 1 for the top signal)",
            "gauge",
        )
        # The alerts compare each risk with this (rules/specs/aiops.yaml). GPU: one series per service while
        # it exports GPU risks, all GPUs share the calibrated threshold of gpu_weights.json. Disk: one series
        # per disk, the labels of its risk plus `model`, since SATA (the loaded disk_model.json's threshold)
        # and NVMe (nvme_weights.json) disks share kind="disk" but not a scale.
        threshold = Metric(
            "vigil_failure_risk_threshold",
            "Alarm threshold (0-1) the failure risk is operated at: calibrated for 0.1 % false alarms",
            "gauge",
        )
        if any(s.kind == "gpu" for s in samples):
            threshold.add_sample("vigil_failure_risk_threshold", {"kind": "gpu", "model": "gpu"},
                                 round(GPU_THRESHOLD, _DIGITS))
        for s in samples:
            labels = {"kind": s.kind, "node": s.node, s.target[0]: s.target[1]}
            risk.add_sample("vigil_failure_risk", labels, round(s.risk, _DIGITS))
            for name, value in sorted(s.reasons.items()):
                reason.add_sample("vigil_failure_risk_reason", {**labels, "reason": name}, round(value, _DIGITS))
            if s.threshold is not None:
                threshold.add_sample("vigil_failure_risk_threshold", {**labels, "model": s.model},
                                    round(s.threshold, _DIGITS))
        yield risk
        yield reason
        yield threshold
        yield GaugeMetricFamily("vigil_failure_risk_up", "1 if the last risk refresh from Prometheus succeeded", value=up)
        yield GaugeMetricFamily(
            "vigil_failure_risk_last_success_timestamp_seconds",
            "Unix time of the last successful risk refresh (0 = never)",
            value=last,
        )
