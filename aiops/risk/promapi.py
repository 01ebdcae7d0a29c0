"""A small reader of the Prometheus HTTP API (`/api/v1/query` and `/api/v1/query_range`).

Plain `requests`, no client library: the risk export and the alert-correlation miner only need
instant vectors and range matrices, returned here as lists of `(labels, value)` and
`(labels, [(t, v), ...])`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from vigil.aiops.prometheus_api import PrometheusUnavailable, api_get

__all__ = ["PrometheusReader", "PrometheusUnavailable"]


@dataclass(frozen=True)
class PrometheusReader:
    """Runs PromQL queries against one Prometheus server."""

    url: str
    timeout_s: float = 10.0

    def _get(self, path: str, params: dict) -> dict:
        return api_get(self.url, path, params, self.timeout_s)

    def query(self, promql: str, at: float | None = None) -> list[tuple[dict[str, str], float]]:
        """Instant query: one `(labels, value)` per series; NaN values are dropped."""
        params = {"query": promql}
        if at is not None:
            params["time"] = f"{at:.3f}"
        data = self._get("/api/v1/query", params)
        if data.get("resultType") != "vector":
            raise PrometheusUnavailable(f"expected an instant vector from {promql!r}, got {data.get('resultType')}")
        out = []
        for series in data["result"]:
            value = float(series["value"][1])
            if not math.isnan(value):
                out.append((dict(series["metric"]), value))
        return out

    def query_range(
        self, promql: str, start: float, end: float, step_s: float
    ) -> list[tuple[dict[str, str], list[tuple[float, float]]]]:
        """Range query: one `(labels, [(timestamp, value), ...])` per series."""
        params = {"query": promql, "start": f"{start:.3f}", "end": f"{end:.3f}", "step": f"{step_s:g}"}
        data = self._get("/api/v1/query_range", params)
        if data.get("resultType") != "matrix":
            raise PrometheusUnavailable(f"expected a range matrix from {promql!r}, got {data.get('resultType')}")
        return [
            (dict(series["metric"]), [(float(t), float(v)) for t, v in series["values"]])
            for series in data["result"]
        ]
