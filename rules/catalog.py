"""The metric catalog the lint checks rules against: every series name Prometheus can hold in vigil's
stack, with its type and label names.

Two sources, both generated, never typed by hand:

- vigil's own exporters, live from their `MetricSpec` declarations (the same lists that generate
  docs/metrics.md, `vigil.exporters.metrics_doc.SOURCES`);
- `rules/metric_catalog.json`, written by `python tools/metric_catalog.py --write` from the real
  node_exporter, Prometheus and Alertmanager binaries and from vigil's notifier and AIOps registries
  (scraped exposition); a test checks it against the binaries installed here.

Names are sample names (`x_total`, `x_bucket`, `x_count`, `x_sum`). Every scraped series also carries
the target labels `job` and `instance`; `up` and the other scrape series also carry `node` (the GPU
job's target label, see vigil.stack.config.prometheus). A label set of None means the labels are not
known (an empty registry at generation time): label checks skip those metrics.
"""

from __future__ import annotations

import difflib
import importlib
import json
from dataclasses import dataclass
from pathlib import Path

from vigil.exporters.metrics_doc import SOURCES as EXPORTER_SPEC_MODULES

CATALOG_PATH = Path(__file__).parent / "metric_catalog.json"
TARGET_LABELS = frozenset({"job", "instance"})
SCRAPE_SERIES = ("up", "scrape_duration_seconds", "scrape_samples_scraped", "scrape_samples_post_metric_relabeling",
                 "scrape_series_added")
SCRAPE_TARGET_LABELS = TARGET_LABELS | {"node"}
RULE_SERIES = ("ALERTS", "ALERTS_FOR_STATE")  # labels: those of each alert (unknown here)


@dataclass(frozen=True)
class MetricInfo:
    """One series name: its type (`counter` for a counter's `_total` and a histogram's or summary's
    `_bucket`/`_count`/`_sum`; `gauge`, `info`, `summary` (quantiles), `unknown`), labels and source."""

    type: str
    labels: frozenset[str] | None
    source: str

    @property
    def is_counter(self) -> bool:
        return self.type == "counter"


@dataclass(frozen=True)
class MetricCatalog:
    metrics: dict[str, MetricInfo]

    def get(self, name: str) -> MetricInfo | None:
        return self.metrics.get(name)

    def labels(self, name: str) -> frozenset[str] | None:
        """The labels of `name` (None when the metric or its labels are unknown)."""
        info = self.metrics.get(name)
        return None if info is None else info.labels

    def close_names(self, name: str, limit: int = 3) -> list[str]:
        """Known names that look like `name` (for "did you mean")."""
        return difflib.get_close_matches(name, list(self.metrics), n=limit, cutoff=0.8)

    def sources(self) -> list[str]:
        return sorted({info.source for info in self.metrics.values()})


def _exporter_metrics() -> dict[str, MetricInfo]:
    found: dict[str, MetricInfo] = {}
    for module_name, title in EXPORTER_SPEC_MODULES:
        try:
            specs = importlib.import_module(module_name).SPECS
        except (ImportError, AttributeError):  # an optional backend not in this build
            continue
        for spec in specs:
            found[spec.name] = MetricInfo(spec.type, frozenset(spec.labels) | TARGET_LABELS, f"vigil: {title}")
    return found


def read_catalog_file(path: Path) -> dict[str, dict[str, dict]]:
    """{source: {series name: {"type", "labels"}}} as written by `tools/metric_catalog.py`."""
    return json.loads(path.read_text(encoding="utf-8"))["sources"]


def with_records(catalog: MetricCatalog, records) -> MetricCatalog:
    """`catalog` plus the series the specs' recording rules record (`rules.model.Recording`), with the labels
    each keeps; the lint learns them the same way while it reads the specs."""
    recorded = {record.name: MetricInfo("gauge", None if record.keeps is None else frozenset(record.keeps),
                                        f"recording rule: {Path(record.file).name}") for record in records}
    return MetricCatalog({**catalog.metrics, **recorded})


def load_catalog(path: Path = CATALOG_PATH) -> MetricCatalog:
    """The catalog of everything vigil's stack exports (see the module docstring)."""
    metrics: dict[str, MetricInfo] = {}
    for name in SCRAPE_SERIES:
        metrics[name] = MetricInfo("gauge", SCRAPE_TARGET_LABELS, "Prometheus: scrape series")
    for name in RULE_SERIES:
        metrics[name] = MetricInfo("gauge", None, "Prometheus: alert series")
    for source, series in read_catalog_file(path).items():
        for name, entry in series.items():
            labels = entry.get("labels")
            metrics.setdefault(name, MetricInfo(entry["type"], None if labels is None
                                                else frozenset(labels) | TARGET_LABELS, source))
    metrics.update(_exporter_metrics())
    return MetricCatalog(metrics)
