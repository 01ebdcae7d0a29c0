"""Compose PromQL from intent pieces and the chosen metric (or derived measure), and say why.

Order of composition (docs/ask.md): selector with the question's label filters (only labels the metric
carries) and the examples' default values; the window (`increase`/`rate` for counters, `*_over_time` for
gauges); a comparison or a down/up state; the aggregation across series (`by` the grouping or the entity
a "which node" question asks for); the ranking (`topk`, `bottomk`, `sort_desc`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

from vigil.rules.promql import format_number, quote

from .intent import Intent
from .knowledge import STACK_TARGET_LABELS, Knowledge, name_tokens, stem
from .retrieve import Match

ENTITY_LABELS = ("node", "gpu", "device", "job_id", "alertname", "mountpoint")
_ENTITY_GROUP = {"node": ("node",), "device": ("node", "device"), "job": ("job_id",), "alert": ("alertname",),
                 "team": ("team",), "target": ("job", "instance"), "reason": ("reason",), "channel": ("channel",)}
DEFAULT_RATE_WINDOW = "5m"
# "per GPU", "per device", "per target": the series are per that entity already (no aggregation)
_FINE = {"gpu", "device", "pid", "mountpoint", "uuid", "link", "cpu", "instance", "job_id"}
_SUMMED = ("bytes", "watts", "joules")  # amounts add up across series; ratios and temperatures average


@dataclass
class Composed:
    promql: str
    metrics: list[str]
    steps: list[str] = field(default_factory=list)


def _selector(metric: str, matchers: dict[str, str]) -> str:
    if not matchers:
        return metric
    return metric + "{" + ", ".join(f"{label}={quote(value)}" for label, value in sorted(matchers.items())) + "}"


def _keep(labels: frozenset[str] | None, intent: Intent, metric: str) -> dict[str, str]:
    """The question's filters this metric carries: named ones (node-3, GPU 2) first, then value words."""
    kept = {k: v for k, v in intent.matchers.items() if labels is None or k in labels}
    for label, value, only in intent.value_words:
        if label not in kept and (labels is None or label in labels) and (only is None or metric in only):
            kept[label] = value
    return kept


def _is_flag(help_text: str) -> bool:
    return help_text.startswith(("1 when", "1 while", "1 for"))


def _sibling_record(name: str, intent: Intent, knowledge: Knowledge) -> str:
    """`job:x:avg` -> `job:x:max` when the question asks for the maximum and that recording exists."""
    parts = name.split(":")
    if len(parts) == 3 and parts[2] in ("avg", "max", "min", "sum") and intent.agg and intent.agg != parts[2]:
        sibling = ":".join(parts[:2] + [intent.agg])
        if sibling in knowledge.metrics:
            return sibling
    return name


def _counts_itself(name: str, intent: Intent, synonyms: dict[str, list[str]]) -> bool:
    """The series already count what the question counts (`vigil_node_gpus_visible` for "how many GPUs")."""
    if name.startswith("ALERTS"):  # one series per alert, each 1
        return False
    nouns = {"gpus", "series", "processes", "incidents", "deliveries", "escalations", "alerts", "pages"}
    asked = set(re.findall(r"[a-z]+", intent.question.lower()))
    meant = {synonym for word in asked for synonym in synonyms.get(stem(word), ())}  # "paged": page
    asked |= {noun for noun in nouns if stem(noun) in meant}
    return bool(name_tokens(name) & nouns & asked)


def compose(intent: Intent, match: Match, knowledge: Knowledge) -> Composed:
    steps: list[str] = []
    defaults = knowledge.lexicon.get("defaults", {})
    if match.measure is not None:
        measure = match.measure
        labels = frozenset(measure["labels"])
        metrics = list(measure["metrics"])
        matchers = _keep(labels, intent, metrics[0])
        parts = [_selector(m, {**defaults.get(m, {}), **matchers}) for m in metrics]
        expr = measure["expr"].format(*parts)
        steps.append(f"'{measure['name']}' is derived: {measure['expr'].format(*metrics)}")
        counter, help_text, unit, name = False, "", "ratio", metrics[0]
    else:
        name = _sibling_record(match.name, intent, knowledge)
        doc = knowledge.metrics[name]
        labels = knowledge.labels(name)
        metrics = [name]
        matchers = {**defaults.get(name, {}), **_keep(labels, intent, name)}
        expr = _selector(name, matchers)
        steps.append(f"{name} ({doc.type}{', ' + doc.unit if doc.unit else ''}): "
                     f"{doc.help or 'matched on ' + ', '.join(sorted(match.matched))}")
        counter, help_text, unit = doc.is_counter, doc.help, doc.unit
    dropped = sorted(set(intent.matchers) - set(matchers))
    if matchers:
        steps.append("filters: " + ", ".join(f"{k}={v}" for k, v in sorted(matchers.items())))
    if dropped:
        steps.append(f"not on this metric, ignored: {', '.join(dropped)}")
    facts = _Facts(name, labels, counter, help_text, unit, _single(labels, matchers),
                   any(phrase in intent.question.lower() for phrase in ("how many", "number of", "how much")),
                   _counts_itself(name, intent, knowledge.lexicon["synonyms"]))
    expr = _over_window(expr, intent, facts, match.measure is not None, steps)
    conditioned = _condition(expr, intent, facts, steps)
    facts = replace(facts, filtered=conditioned != expr)
    expr = _aggregate(conditioned, intent, facts, steps)
    if intent.rank:
        fn, k = intent.rank
        expr = f"{fn}({expr})" if fn in ("sort", "sort_desc") else f"{fn}({k}, {expr})"
        steps.append(f"rank: {fn}" + (f" {k}" if fn in ("topk", "bottomk") else ""))
    return Composed(expr, metrics, steps)


@dataclass(frozen=True)
class _Facts:
    """What composition needs to know of the chosen metric and the question."""

    name: str
    labels: frozenset[str] | None
    counter: bool
    help: str
    unit: str
    single: bool  # the filters name one entity
    how_many: bool  # "how many", "number of", "how much"
    counts_itself: bool  # the series already count what is asked (vigil_node_gpus_visible)
    filtered: bool = False  # a condition keeps some series (`> 0`, `== 1`, `< 0.1`)

    @property
    def zero_one(self) -> bool:
        return _is_flag(self.help) or self.name.endswith("_up") or self.name == "up"


def _over_window(expr: str, intent: Intent, facts: _Facts, derived: bool, steps: list[str]) -> str:
    if facts.counter:
        if intent.window:
            fn = "rate" if intent.rate else "increase"
            steps.append(f"a counter: {fn} over the last {intent.window}")
            return f"{fn}({expr}[{intent.window}])"
        if intent.rate:
            steps.append(f"a counter: per-second rate over {DEFAULT_RATE_WINDOW}")
            return f"rate({expr}[{DEFAULT_RATE_WINDOW}])"
    elif intent.window and not derived:
        fn = intent.over_time or ("min" if intent.rank and intent.rank[0] in ("bottomk", "sort") else
                                  "max" if intent.rank else "avg")
        steps.append(f"a gauge over the last {intent.window}: {fn}_over_time")
        return f"{fn}_over_time({expr}[{intent.window}])"
    return expr


def _condition(expr: str, intent: Intent, facts: _Facts, steps: list[str]) -> str:
    """A comparison the question states, or the one a "which ... down/have/had" question implies."""
    plain = not intent.rank and not intent.group_by and not intent.agg
    if intent.compare:
        op, value, unit_word = intent.compare
        if unit_word in ("%", "percent") and facts.unit == "ratio":
            value /= 100
        steps.append(f"keep the series {op} {format_number(value)}")
        return f"{expr} {op} {format_number(value)}"
    tokens = name_tokens(facts.name)
    if intent.down and (facts.zero_one or "ok" in tokens or "healthy" in tokens):
        steps.append("down/failed: the series at 0")
        return f"{expr} == 0"
    if (intent.which or intent.listing or (intent.count and not facts.counts_itself)) and plain and facts.zero_one:
        steps.append("a 0/1 series: the ones at 1")
        return f"{expr} == 1"
    if intent.which and plain and facts.counter and not intent.rate:
        steps.append("a counter: the series that counted any")
        return f"{expr} > 0"
    return expr


def _aggregate(expr: str, intent: Intent, facts: _Facts, steps: list[str]) -> str:
    """Across series: count, by a grouping (asked, or the entity a ranked "which node" asks for), or all."""
    labels = facts.labels
    group = intent.group_by + tuple(w for w in intent.group_words if labels is not None and w in labels)
    if intent.rank and intent.which in _ENTITY_GROUP and not group:
        wanted = _ENTITY_GROUP[intent.which]
        if labels is None or (set(wanted) <= labels and labels & {"gpu", "device"} - set(wanted)):
            group = wanted
    per_entity = bool(group)
    if group and set(group) & _FINE and (labels is None or set(group) <= labels):
        steps.append(f"the series are per {', '.join(group)} already")
        group = ()
    amount = facts.counter or facts.counts_itself or facts.unit in _SUMMED
    # "how many GPUs had XID 79": the GPUs whose counter moved, counted; "how many XID errors": the sum
    if (intent.count or (facts.how_many and intent.which)) and not facts.counts_itself \
            and (not facts.counter or facts.filtered):
        steps.append("count the series" + (f" per {', '.join(group)}" if group else ""))
        return f"count{_by(group)}({expr})"
    if group:
        fn = intent.agg or ("count" if facts.name.startswith("ALERTS") else "sum" if amount else "avg")
        steps.append(f"{fn} per {', '.join(group)}")
        return f"{fn}{_by(group)}({expr})"
    recorded = facts.name.count(":") == 2  # a recording rule's series are aggregated already
    if intent.agg and not intent.rank and not facts.single and not recorded:
        steps.append(f"{intent.agg} across the matching series")
        return f"{intent.agg}({expr})"
    if amount and not intent.rank and not facts.single and not intent.which and not per_entity \
            and (intent.window or intent.rate or facts.how_many):
        steps.append("sum across the matching series")
        return f"sum({expr})"
    return expr


def _by(group: tuple[str, ...]) -> str:
    return f" by ({', '.join(group)}) " if group else ""


def _single(labels: frozenset[str] | None, matchers: dict[str, str]) -> bool:
    """The filters name one entity: every entity label the metric has is fixed."""
    if labels is None:
        return False
    entity = [label for label in ENTITY_LABELS if label in labels]
    return bool(entity) and all(label in matchers for label in entity)
