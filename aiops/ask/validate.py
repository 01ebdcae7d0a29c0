"""Check a composed (or model-written) query: it parses as PromQL and names only metrics and labels that
exist in vigil's catalog. The same parser and reader as the rule lint (`vigil.rules.query`)."""

from __future__ import annotations

from vigil.rules.query import QuerySyntaxError, read_query

from .knowledge import ALERT_LABELS, Knowledge


class InvalidQuery(ValueError):
    """The query does not parse, or names a metric or label vigil does not have."""


def validate(promql: str, knowledge: Knowledge) -> list[str]:
    """The metrics `promql` reads, in order; raises InvalidQuery with every problem found."""
    try:
        reading = read_query(promql, knowledge.labels)
    except QuerySyntaxError as exc:
        raise InvalidQuery(f"not valid PromQL: {exc}") from None
    problems, metrics = [], []
    for selector in reading.selectors:
        if selector.name is None:
            problems.append("a selector without a metric name")
            continue
        if selector.name not in knowledge.metrics:
            problems.append(f"unknown metric {selector.name}")
            continue
        metrics.append(selector.name)
        labels = knowledge.labels(selector.name)
        if labels is None and selector.name.startswith("ALERTS"):
            labels = ALERT_LABELS
        for label, _op, _value in selector.matchers:
            if label != "__name__" and labels is not None and label not in labels:
                problems.append(f"{selector.name} has no label {label!r}")
    for use in reading.label_uses:
        if all(side is not None and use.label not in side for side in use.sides) and use.sides:
            problems.append(f"label {use.label!r} of {use.where} is not on the series below it")
    if problems:
        raise InvalidQuery("; ".join(dict.fromkeys(problems)))
    return list(dict.fromkeys(metrics))
