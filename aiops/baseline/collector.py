"""Prometheus collector that publishes the band for *now* of every managed series.

Contract (alert rules depend on it): `vigil_baseline_upper`, `vigil_baseline_lower` and
`vigil_baseline_expected` carry the source series' labels minus `job` and `instance`, plus
`metric="<source metric name>"`, e.g.

    vigil_gpu_utilization_ratio < on(node, gpu) group_left
        vigil_baseline_lower{metric="vigil_gpu_utilization_ratio"}
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np
from prometheus_client.core import GaugeMetricFamily, Metric

from vigil.aiops.baseline.classify import CLASSES
from vigil.aiops.baseline.models import band
from vigil.aiops.baseline.train import baseline_labels


@dataclass(frozen=True)
class BaselineSnapshot:
    """One loaded model store, immutable so a scrape never sees half of a refit."""

    entries: tuple[dict, ...]
    labels: tuple[dict[str, str], ...]
    sensitivity: float
    trained_at: float
    fit_seconds: float

    @classmethod
    def from_store(cls, store: dict, sensitivity: float | None = None) -> BaselineSnapshot:
        entries = tuple(store["series"])
        return cls(
            entries=entries,
            labels=tuple(baseline_labels(e["metric"], e["labels"]) for e in entries),
            sensitivity=float(sensitivity if sensitivity is not None else store.get("sensitivity", 1.0)),
            trained_at=float(store.get("trained_at") or 0.0),
            fit_seconds=float(store.get("fit_seconds") or 0.0),
        )


class BaselineCollector:
    """Bands at the current time for the snapshot `current()` returns (None: nothing loaded yet)."""

    def __init__(self, current: Callable[[], BaselineSnapshot | None], clock: Callable[[], float] = time.time):
        self._current = current
        self._clock = clock

    def collect(self) -> Iterator[Metric]:
        snapshot = self._current()
        upper = Metric("vigil_baseline_upper", "Upper edge of the dynamic baseline band of the source series now.", "gauge")
        lower = Metric("vigil_baseline_lower", "Lower edge of the dynamic baseline band of the source series now.", "gauge")
        expected = Metric("vigil_baseline_expected", "Expected value of the source series now, from its baseline model.", "gauge")
        series = GaugeMetricFamily("vigil_baseline_series", "Series with a baseline model loaded.")
        by_class = GaugeMetricFamily(
            "vigil_baseline_series_by_class", "Series with a baseline model loaded, by series class.", labels=["class"]
        )
        last_fit = GaugeMetricFamily(
            "vigil_baseline_last_fit_timestamp_seconds", "Unix time the loaded baselines finished fitting."
        )
        duration = GaugeMetricFamily(
            "vigil_baseline_fit_duration_seconds", "Seconds the last fit of all baselines took (fitting only)."
        )
        if snapshot is not None:
            now = np.array([self._clock()])
            for entry, labels in zip(snapshot.entries, snapshot.labels):
                value, lo, hi = band(entry["model"], now, snapshot.sensitivity)
                expected.add_sample("vigil_baseline_expected", labels, float(value[0]))
                lower.add_sample("vigil_baseline_lower", labels, float(lo[0]))
                upper.add_sample("vigil_baseline_upper", labels, float(hi[0]))
            series.add_metric([], len(snapshot.entries))
            counts = Counter(entry["class"] for entry in snapshot.entries)
            for kind in CLASSES:
                by_class.add_metric([kind], counts.get(kind, 0))
            last_fit.add_metric([], snapshot.trained_at)
            duration.add_metric([], snapshot.fit_seconds)
        else:
            series.add_metric([], 0)
        yield from (upper, lower, expected, series, by_class)
        if snapshot is not None:
            yield from (last_fit, duration)
