"""Training baselines for many series: fetch history, clean it, fit each series, build the store entries.

History from Prometheus streams (`history_from_prometheus`: a batch of series at a time), so training
memory grows with the batch and the models, not with the fleet's history."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from vigil.aiops.baseline.fit import NotEnoughData, fit_series
from vigil.aiops.baseline.store import save_store
from vigil.aiops.history.clean import prepare
from vigil.aiops.history.files import read_series_file
from vigil.aiops.history.prometheus import PrometheusReader
from vigil.aiops.history.prometheus_batches import DEFAULT_BATCH_SERIES, BatchedHistory
from vigil.aiops.history.series import Series

# Labels that name the scrape target rather than the thing measured: dropped from baseline series so
# alert rules can join on the remaining labels (e.g. node, gpu).
TARGET_LABELS = ("job", "instance")


@dataclass(frozen=True)
class TrainSettings:
    """How history is read and bands are drawn."""

    step: float = 300.0
    max_gap: float = 900.0
    sensitivity: float = 1.0
    lookback: float = 14 * 86_400.0


@dataclass
class TrainResult:
    """Entries ready for the store, the series left out (with why), and fit timing."""

    entries: list[dict]
    skipped: list[str] = field(default_factory=list)
    fit_seconds: float = 0.0
    finished_at: float = 0.0
    read: int = 0  # series read, fitted or skipped

    def by_class(self) -> Counter:
        return Counter(entry["class"] for entry in self.entries)


def baseline_labels(metric: str, labels: dict[str, str]) -> dict[str, str]:
    """Labels a baseline series carries: the source's minus job/instance, plus metric=<source name>."""
    out = {k: v for k, v in labels.items() if k not in TARGET_LABELS}
    out["metric"] = metric
    return out


def history_window(settings: TrainSettings, end: float | None = None) -> tuple[float, float]:
    """(start, end) of the lookback window ending at `end` (default: now), aligned to the step so
    repeated trainings query the same points."""
    end = time.time() if end is None else end
    end -= end % settings.step
    return end - settings.lookback, end


def history_from_prometheus(
    url: str,
    selectors: Iterable[str],
    settings: TrainSettings,
    end: float | None = None,
    max_points: int | None = None,
    batch_size: int = DEFAULT_BATCH_SERIES,
) -> BatchedHistory:
    """The series matching `selectors` over the lookback window ending at `end` (default: now): listed
    now (`count`), read `batch_size` at a time as they are iterated, so `train` holds one batch at most."""
    reader = PrometheusReader(url) if max_points is None else PrometheusReader(url, max_points=max_points)
    start, end = history_window(settings, end)
    return BatchedHistory(reader, selectors, start, end, settings.step, batch_size)


def history_from_files(paths: Iterable[str | Path]) -> list[Series]:
    """All series in the given CSV/Parquet files."""
    series: list[Series] = []
    for path in paths:
        series.extend(read_series_file(path))
    return series


def train(
    raw: Iterable[Series],
    settings: TrainSettings,
    on_series: Callable[[], None] | None = None,
) -> TrainResult:
    """Fit every series; series too short, or duplicates once job/instance are dropped, are skipped.

    `raw` is read once, in order: a generator (`history_from_prometheus`) is consumed a series at a time
    and only the entries are kept, so the histories are never all in memory. `fit_seconds` counts the
    fitting only, not the reading a generator does between series.
    """
    fit_seconds = 0.0
    entries: dict[tuple, dict] = {}
    skipped: list[str] = []
    read = 0
    for series in raw:
        read += 1
        started = time.perf_counter()
        try:
            entry = fit_series(prepare(series, settings.step, settings.max_gap), settings.step, settings.sensitivity)
        except NotEnoughData as exc:
            skipped.append(str(exc))
            continue
        finally:
            fit_seconds += time.perf_counter() - started
            if on_series is not None:
                on_series()
        key = (series.name, tuple(sorted(baseline_labels(series.name, series.labels).items())))
        previous = entries.get(key)
        if previous is not None:
            loser = min(previous, entry, key=lambda e: e["points"])
            skipped.append(
                f"{series.name}{loser['labels']}: same labels as another series once job/instance are dropped; "
                "kept the one with more points"
            )
            if loser is previous:
                entries[key] = entry
            continue
        entries[key] = entry
    return TrainResult(list(entries.values()), skipped, fit_seconds, time.time(), read)


def save_result(model_dir: str | Path, result: TrainResult, settings: TrainSettings, source: str) -> Path:
    """Write the store for a training result."""
    return save_store(
        model_dir,
        result.entries,
        {
            "trained_at": result.finished_at,
            "fit_seconds": result.fit_seconds,
            "sensitivity": settings.sensitivity,
            "step_seconds": settings.step,
            "max_gap_seconds": settings.max_gap,
            "lookback_seconds": settings.lookback,
            "source": source,
        },
    )
