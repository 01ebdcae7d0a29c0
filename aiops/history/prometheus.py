"""Reading history from Prometheus' HTTP API (`/api/v1/query_range`), chunked for long ranges.

The requests go through the shared client (`vigil.common.prometheus_api`); this module adds the
chunking, the merge of chunks per series and the conversion to `Series`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np
import requests

from vigil.aiops.history.series import HistoryError, Series, looks_like_counter
from vigil.common.prometheus_api import PrometheusClient, PrometheusUnavailable

# Prometheus rejects a range query whose (end - start) / step exceeds 11,000 points per series.
PROMETHEUS_MAX_POINTS = 11_000


def chunk_ranges(start: float, end: float, step: float, max_points: int) -> Iterator[tuple[float, float]]:
    """Split [start, end] into consecutive ranges of at most `max_points` grid points each.

    Each chunk starts one step after the previous one ends, so no grid point is queried twice.
    """
    if step <= 0:
        raise ValueError("step must be positive")
    if max_points < 1:
        raise ValueError("max_points must be at least 1")
    width = (max_points - 1) * step
    chunk_start = start
    while chunk_start <= end:
        chunk_end = min(chunk_start + width, end)
        yield chunk_start, chunk_end
        chunk_start = chunk_end + step


class PrometheusReader:
    """Reads series from one Prometheus server.

    `max_points` bounds the points per series per request (default: Prometheus' own limit); tests force
    it small to exercise chunking against a real server.
    """

    def __init__(self, url: str, timeout: float = 30.0, max_points: int = PROMETHEUS_MAX_POINTS):
        self.client = PrometheusClient(url, timeout=timeout, session=requests.Session())
        self.max_points = max_points

    def query_range(
        self,
        query: str,
        start: float,
        end: float,
        step: float,
        on_chunk: Callable[[], None] | None = None,
    ) -> list[Series]:
        """All series `query` returns between `start` and `end` (Unix seconds) at `step` seconds.

        Chunks are merged per label set; series come back sorted by identity so results are
        deterministic. `on_chunk` is called after each chunk (for progress bars).
        """
        samples: dict[tuple, tuple[dict[str, str], list[np.ndarray]]] = {}
        for chunk_start, chunk_end in chunk_ranges(start, end, step, self.max_points):
            try:
                chunk = self.client.query_range(query, chunk_start, chunk_end, step)
            except PrometheusUnavailable as exc:
                raise HistoryError(str(exc)) from exc
            for metric, points in chunk:
                key = tuple(sorted(metric.items()))
                pairs = np.array(points, dtype=np.float64).reshape(-1, 2)
                samples.setdefault(key, (metric, []))[1].append(pairs)
            if on_chunk is not None:
                on_chunk()
        result = []
        for key in sorted(samples):
            metric, chunks = samples[key]
            pairs = np.concatenate(chunks)
            labels = {k: v for k, v in metric.items() if k != "__name__"}
            name = metric.get("__name__", query)
            result.append(Series(name, labels, pairs[:, 0], pairs[:, 1], is_counter=looks_like_counter(name)))
        return result

    def chunk_count(self, start: float, end: float, step: float) -> int:
        """How many requests `query_range` makes per query for this range."""
        return sum(1 for _ in chunk_ranges(start, end, step, self.max_points))
