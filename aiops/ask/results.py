"""An answer's query run on a Prometheus of the stack (`vigil ask --run`, `POST /api/v1/ask` with `run`)."""

from __future__ import annotations

import math

from vigil.common.prometheus_api import PrometheusClient


def run_query(promql: str, prometheus_url: str, at: float | None = None) -> list[dict]:
    """The instant result of `promql` as [{"labels": {...}, "value": v}] (raises PrometheusUnavailable)."""
    samples = PrometheusClient(prometheus_url, timeout=30).query(promql, at=at)
    return [{"labels": sample.labels, "value": _json_number(sample.value)} for sample in samples]


def _json_number(value: float) -> float | str:
    """A sample value JSON can hold: NaN and the infinities as Prometheus's API spells them ("NaN",
    "+Inf", "-Inf"), since JSON has no such numbers."""
    if math.isfinite(value):
        return value
    return "NaN" if math.isnan(value) else ("+Inf" if value > 0 else "-Inf")
