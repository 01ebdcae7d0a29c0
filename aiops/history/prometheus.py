"""Reading history from Prometheus' HTTP API (`/api/v1/query_range`), chunked for long ranges.

The requests go through the shared client (`vigil.common.prometheus_api`); this module adds the
chunking, the merge of chunks per series and the conversion to `Series` (through one numpy array per
series and chunk, not a Python tuple per point) and the listing of a selector's series
(`/api/v1/series`), which `prometheus_batches.BatchedHistory` uses to read a fleet a batch at a time.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import requests

from vigil.aiops.history.promql_selectors import SeriesKey, series_key
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
        keep: set[SeriesKey] | None = None,
    ) -> list[Series]:
        """All series `query` returns between `start` and `end` (Unix seconds) at `step` seconds (only
        those whose identity is in `keep`, when given).

        Chunks are merged per label set; series come back sorted by identity so results are
        deterministic.
        """
        samples: dict[SeriesKey, tuple[dict[str, str], list[np.ndarray]]] = {}
        for chunk_start, chunk_end in chunk_ranges(start, end, step, self.max_points):
            try:
                raw = self.client.query_range_raw(query, chunk_start, chunk_end, step)
            except PrometheusUnavailable as exc:
                raise HistoryError(str(exc)) from exc
            for metric, pairs in _as_arrays(raw):
                key = series_key(metric)
                if keep is None or key in keep:
                    samples.setdefault(key, (metric, []))[1].append(pairs)
        result = []
        for key in sorted(samples):
            metric, chunks = samples.pop(key)
            pairs = np.concatenate(chunks)
            labels = {k: v for k, v in metric.items() if k != "__name__"}
            name = metric.get("__name__", query)
            result.append(Series(name, labels, pairs[:, 0], pairs[:, 1], is_counter=looks_like_counter(name)))
        return result

    def list_series(self, selector: str, start: float, end: float) -> list[SeriesKey]:
        """The identities (sorted `(label, value)` pairs, `__name__` included) of the series `selector`
        matches between `start` and `end`, sorted: `/api/v1/series`, labels only, no samples."""
        try:
            found = self.client.series(selector, start=start, end=end)
        except PrometheusUnavailable as exc:
            raise HistoryError(str(exc)) from exc
        return sorted({series_key(labels) for labels in found})

    def chunk_count(self, start: float, end: float, step: float) -> int:
        """How many requests `query_range` makes per query for this range."""
        return sum(1 for _ in chunk_ranges(start, end, step, self.max_points))


def _as_arrays(raw: list[dict]) -> Iterator[tuple[dict[str, str], np.ndarray]]:
    """Each series of a raw matrix as `(labels, float64 array of (t, v) rows)`; each series' parsed points
    are released as soon as they are converted, so the lists and the arrays never all live at once."""
    raw.reverse()
    while raw:
        series = raw.pop()
        yield series["metric"], np.array(series["values"], dtype=np.float64).reshape(-1, 2)
