"""Failure risk of GPUs and disks, exported as Prometheus metrics.

Contract: `risk_collectors(model_dir, prometheus_url)` returns prometheus_client collectors, already
refreshing on a background thread, for the caller to register (`vigil aiops serve` does).
"""

from __future__ import annotations

import logging
from pathlib import Path

from vigil.aiops.risk.collector import FailureRiskCollector
from vigil.common.prometheus_api import PrometheusClient

log = logging.getLogger(__name__)

__all__ = ["risk_collectors", "FailureRiskCollector"]


def risk_collectors(model_dir: Path, prometheus_url: str | None, interval_s: float = 60.0) -> list:
    """Collectors exporting `vigil_failure_risk` for GPUs (always) and disks (when `model_dir` holds a
    disk model from `vigil aiops train-disk`). Without a Prometheus URL there is nothing to read: []."""
    if not prometheus_url:
        log.info("no Prometheus URL given: failure risk is not exported")
        return []
    collector = FailureRiskCollector(PrometheusClient(prometheus_url), Path(model_dir), interval_s=interval_s)
    return [collector.start()]
