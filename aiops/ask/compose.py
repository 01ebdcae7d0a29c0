"""Compose PromQL from intent pieces and the chosen metric (or derived measure), and say why.

Order of composition (docs/ask.md): selector with the question's label filters (only labels the metric
carries) and the examples' default values; a derived ratio over a scope (scope.py); the window
(`increase`/`rate` for counters, `*_over_time` for gauges, a record's raw series: records.py); a comparison
or a down/up state; a fraction of things or a share of the whole (scope.py); the aggregation across series
(aggregate.py); the ranking (`topk`, `bottomk`, `sort_desc`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

from vigil.rules.promql import format_number, quote

from .aggregate import Facts, aggregate, condition, fraction_of_things, record_grouping, single, wanted_group
from .groups import resolve
from .intent import Intent
from .knowledge import Knowledge, name_tokens, stem
from .records import raw_over_window
from .then import against_then
from .retrieve import Match
from .scope import count_fraction, is_share, part_of_whole, scoped_ratio, share_of_whole

DEFAULT_RATE_WINDOW = "5m"


@dataclass
class Composed:
    promql: str
    metrics: list[str]
    steps: list[str] = field(default_factory=list)


def selector(metric: str, matchers: dict[str, str]) -> str:
    """`metric{label="value", ...}` with the labels in order (the bare name without matchers); a value of
    several ("node-1|node-2") matches any of them."""
    if not matchers:
        return metric
    return metric + "{" + ", ".join(f"{label}{'=~' if '|' in value else '='}{quote(value)}"
                                    for label, value in sorted(matchers.items())) + "}"


def _keep(labels: frozenset[str] | None, intent: Intent, metric: str) -> dict[str, str]:
    """The question's filters this metric carries: named ones (node-3, GPU 2) first, then value words."""
    kept = {k: v for k, v in intent.matchers.items() if labels is None and (k != "alertname" or metric == "ALERTS")
            or labels is not None and k in labels}  # an alert's name said ("watchdog") filters alerts only
    for label, value, only in intent.value_words:
        if label not in kept and (labels is None or label in labels) and (only is None or metric in only):
            kept[label] = value
    return kept


def _sibling_record(name: str, intent: Intent, knowledge: Knowledge) -> str:
    """`job:x:avg` -> `job:x:max` when the question asks for the maximum and that recording exists; ->
    `job_gpu:x:ratio` when it asks which GPU (a job's straggler: one series per GPU of the job)."""
    parts = name.split(":")
    if intent.which == "gpu" and len(parts) == 3 and "gpu" not in parts[0].split("_"):
        finer = sorted(m for m in knowledge.records if m.split(":")[1:2] == parts[1:2]
                       and set(m.split(":")[0].split("_")) == {parts[0], "gpu"})
        if finer:
            return finer[0]
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
        fixed = measure.get("matchers", {})
        reached: dict[str, str] = {}  # a measure's own series only (no job's GPUs through vigil_gpu_job)
        parts = [selector(m, {**defaults.get(m, {}), **fixed.get(m, {}), **matchers}) for m in metrics]
        steps.append(f"'{measure['name']}' is derived: {measure['expr'].format(*metrics)}")
        _say_filters(intent, matchers, steps)
        if intent.agg in (None, "sum") and not intent.group_by and \
                part_of_whole(intent.text, intent.scope, bool(set(matchers) & {"node", "gpu"}), measure.get("of", [])):
            whole = selector(metrics[0], {**defaults.get(metrics[0], {}), **fixed.get(metrics[0], {})})
            steps.append("the part the filters pick over the whole fleet's")
            return _ranked(f"sum({parts[0]}) / sum({whole})", intent, metrics[:1], steps)
        if intent.agg in (None, "sum") and measure.get("scoped", True):  # a measure of rates is grouped already
            group = resolve(wanted_group(intent, labels), labels, knowledge).labels
            scoped = scoped_ratio(measure, parts, group, intent.scope, single(labels, matchers), intent.text,
                                  intent.agg == "sum")
            if scoped:
                steps.append(scoped[1])
                return _ranked(scoped[0], intent, metrics, steps)
        expr = measure["expr"].format(*parts)
        counter, help_text, unit, name, grouped = False, "", measure.get("unit", "ratio"), metrics[0], ()
    else:
        name = _sibling_record(match.name, intent, knowledge)
        doc = knowledge.metrics[name]
        labels = knowledge.labels(name)
        metrics = [name]
        default = {k: v for k, v in defaults.get(name, {}).items() if k not in intent.group_by}  # "sm and memory"
        matchers = {**default, **_keep(labels, intent, name)}
        expr = selector(name, matchers)
        steps.append(f"{name} ({doc.type}{', ' + doc.unit if doc.unit else ''}): "
                     f"{doc.help or 'matched on ' + ', '.join(sorted(match.matched))}")
        reached = _reached(intent, labels, knowledge)
        _say_filters(intent, {**matchers, **reached}, steps)
        counter, help_text, unit = doc.is_counter, doc.help, doc.unit
        grouped = record_grouping(knowledge.records.get(name))
    facts = Facts(name, labels, counter, help_text, unit, single(labels, matchers),
                  any(phrase in intent.question.lower() for phrase in ("how many", "number of", "how much")),
                  _counts_itself(name, intent, knowledge.lexicon["synonyms"]), grouped=grouped,
                  fixed=frozenset(label for label, value in matchers.items() if "|" not in value))
    expr = _over_window(expr, intent, facts, match.measure is not None, matchers, knowledge, steps)
    expr = _kept_through(expr, intent, reached, knowledge, steps)
    if intent.age and name.endswith("_timestamp_seconds") and not facts.counter and not intent.window:
        expr = f"time() - {expr}"  # "how many seconds ago", "how long since the last heartbeat"
        steps.append("how long ago: now minus the time recorded")
    conditioned = condition(expr, intent, facts, steps)
    fraction = fraction_of_things(expr, conditioned, intent, facts, knowledge, steps) \
        or _fraction_of_values(expr, intent, facts, matchers, knowledge, steps)
    if fraction:
        return _ranked(fraction, intent, metrics, steps)
    group = wanted_group(intent, labels)
    if conditioned == expr and facts.amount and is_share(intent.scope, group, intent.text, []):
        steps.append(f"each {', '.join(group)}'s share of the whole")
        return _ranked(share_of_whole(expr, group), intent, metrics, steps)
    facts = replace(facts, filtered=conditioned != expr)
    aggregated = aggregate(conditioned, intent, facts, knowledge, steps)
    unit = unit or next((u for u in _UNIT_SIZES if name.endswith(("_" + u, "_" + u + "_total"))), "")
    converted = aggregated if facts.filtered else _converted(aggregated, intent.unit_out, unit, steps)
    if intent.then_s:
        converted = against_then(converted, intent.then_s, knowledge, steps)
    return _ranked(converted, intent, metrics, steps)  # a kept series stays in the unit its comparison was read in


# "uptime in days", "free space in GB": the answer in the unit asked, from the series' own
_UNIT_SIZES = {"seconds": {"minutes": 60, "hours": 3600, "days": 86400, "weeks": 604800},
               "bytes": {"kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12, "kib": 2 ** 10, "mib": 2 ** 20, "gib": 2 ** 30,
                         "tib": 2 ** 40},
               "hertz": {"mhz": 1e6, "ghz": 1e9},
               "joules": {"kj": 1e3, "mj": 1e6, "wh": 3600, "kwh": 3.6e6, "mwh": 3.6e9},
               "watts": {"kw": 1e3, "mw": 1e6}}


def _converted(expr: str, unit_out: str | None, unit: str, steps: list[str]) -> str:
    size = _UNIT_SIZES.get(unit, {}).get(unit_out or "")
    if not size:
        return expr
    steps.append(f"in {unit_out}: {unit} / {format_number(size)}")
    return f"({expr}) / {format_number(size)}"


def _fraction_of_values(expr: str, intent: Intent, facts: Facts, matchers: dict[str, str], knowledge: Knowledge,
                        steps: list[str]) -> str | None:
    """"What fraction of the deliveries failed": the sum of those with the value over the sum of all (the
    label the question's last value word fixed, `result="failed"`, left out below the line; an earlier one,
    "SMS deliveries", filters both)."""
    applied = [label for label, _, only in intent.value_words
               if label in matchers and label not in intent.matchers and (only is None or facts.name in only)]
    valued = set(applied[-1:])  # the last value word is the part ("SMS deliveries that failed": failed)
    if not (intent.scope.fraction and valued and facts.amount) or intent.compare or facts.name.count(":") == 2:
        return None
    every = selector(facts.name, {k: v for k, v in matchers.items() if k not in valued})
    every = _over_window(every, intent, facts, False, matchers, knowledge, [])
    group = resolve(wanted_group(intent, facts.labels), facts.labels, knowledge).labels
    steps.append(f"the fraction with {', '.join(f'{k}={matchers[k]}' for k in sorted(valued))}: their sum over all")
    return count_fraction(expr, every, group, "sum")


def _reached(intent: Intent, labels: frozenset[str] | None, knowledge: Knowledge) -> dict[str, str]:
    """The question's filters on labels the series lack but reach through a related series (lexicon `joins`
    with a series name: "job 57433800's GPU memory" through `vigil_gpu_job`, on node and GPU)."""
    joins = knowledge.lexicon.get("joins", {})
    return {label: value for label, value in intent.matchers.items()
            if labels is not None and label not in labels and label in joins
            and set(joins[label]["on"]) <= labels and "(" not in joins[label]["series"]}


def _kept_through(expr: str, intent: Intent, reached: dict[str, str], knowledge: Knowledge,
                  steps: list[str]) -> str:
    """`expr` kept to the series that filters it lacks reach through another series: a job's GPUs
    (`reached`, from `_reached`), a person's jobs (`intent.person_jobs`: "dave's GPUs")."""
    joins = knowledge.lexicon.get("joins", {})
    for label, value in sorted(reached.items()):
        on, series = joins[label]["on"], selector(joins[label]["series"], {label: value})
        expr = f"({expr} and on ({', '.join(on)}) {series})"
        steps.append(f"{label}={value} through {series} (on {', '.join(on)})")
    if intent.person_jobs:
        on, series = intent.person_jobs
        expr = f"({expr} and on ({', '.join(on)}) {series})"
        steps.append(f"only {intent.person}'s: through the jobs' info ({series}, on {', '.join(on)})")
    return expr


def _say_filters(intent: Intent, matchers: dict[str, str], steps: list[str]) -> None:
    dropped = sorted(set(intent.matchers) - set(matchers))
    if matchers:
        steps.append("filters: " + ", ".join(f"{k}={v}" for k, v in sorted(matchers.items())))
    if dropped:
        steps.append(f"not on this metric, ignored: {', '.join(dropped)}")


def _ranked(expr: str, intent: Intent, metrics: list[str], steps: list[str]) -> Composed:
    if intent.rank:
        fn, k = intent.rank
        expr = f"{fn}({expr})" if fn in ("sort", "sort_desc") else f"{fn}({k}, {expr})"
        steps.append(f"rank: {fn}" + (f" {k}" if fn in ("topk", "bottomk") else ""))
    return Composed(expr, metrics, steps)


def _over_window(expr: str, intent: Intent, facts: Facts, derived: bool, matchers: dict[str, str],
                 knowledge: Knowledge, steps: list[str]) -> str:
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
        raw = raw_over_window(facts.name, fn, intent.window, matchers, knowledge)
        if raw:
            steps.append(f"{fn}_over_time of {raw[1]} over the last {intent.window}, read inside the record "
                         f"{facts.name}: a record has samples only since its rule was loaded, the raw series "
                         "keep the history")
            return raw[0]
        steps.append(f"a gauge over the last {intent.window}: {fn}_over_time")
        return f"{fn}_over_time({expr}[{intent.window}])"
    return expr
