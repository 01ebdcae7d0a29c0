"""Build prometheus_client metric families from `MetricSpec` declarations.

Collectors declare what they publish once (their `SPECS`) and create families through `family()`, so
the name, type, help and label names on the page are the ones in the spec and in the docs.
"""

from __future__ import annotations

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, InfoMetricFamily, Metric

from vigil.exporters.spec import MetricSpec


def family(spec: MetricSpec) -> Metric:
    """An empty family for `spec`; add samples with `add(fam, spec, labels, value)`."""
    if spec.type == "counter":
        return CounterMetricFamily(spec.name, spec.help, labels=spec.labels)
    if spec.type == "info":
        return InfoMetricFamily(spec.name.removesuffix("_info"), spec.help, labels=spec.labels)
    return GaugeMetricFamily(spec.name, spec.help, labels=spec.labels)


def add(fam: Metric, spec: MetricSpec, labels: dict[str, str], value: float = 1.0) -> None:
    """Add one sample; `labels` must name exactly the spec's labels (a KeyError says which is missing)."""
    values = [labels[name] for name in spec.labels]
    if spec.type == "info":
        fam.add_metric(values, {})
    else:
        fam.add_metric(values, value)
