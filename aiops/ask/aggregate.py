"""Across series: the condition a question states or implies, and the aggregation (docs/ask.md, steps 4).

- a comparison ("above 80 degrees"), `== 0` for "down/lost/failed" on a 0/1 series, `== 1` for "which
  GPUs have ..." on a flag, `> 0` for "which GPUs had ..." on a counter or a SMART count;
- "what fraction of all GPUs are <kept>": `count(kept) / count(all)` (scope.py);
- the aggregation: a count for "how many", by the grouping (its labels resolved on the series: groups.py),
  the question's aggregation word, or the natural one of a whole scope ("overall", "of the fleet": a sum
  for amounts, an average for ratios and temperatures).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from vigil.rules.promql import format_number

from .groups import joined, resolve
from .intent import Intent
from .knowledge import Knowledge, name_tokens
from .scope import count_fraction, natural_aggregation

ENTITY_LABELS = ("node", "gpu", "device", "job_id", "alertname", "mountpoint")
_ENTITY_GROUP = {"node": ("node",), "device": ("node", "device"), "job": ("job_id",), "alert": ("alertname",),
                 "team": ("team",), "target": ("job", "instance"), "reason": ("reason",), "channel": ("channel",),
                 "xid": ("xid",), "user": ("user",), "tenant": ("tenant",)}
_JOINED = frozenset({"user", "tenant"})  # reached on per-GPU series through the job's info (lexicon `joins`)
# "per GPU", "per device", "per target": the series are per that entity already (no aggregation)
_FINE = {"gpu", "device", "pid", "mountpoint", "uuid", "link", "cpu", "instance", "job_id"}
_SUMMED = ("bytes", "watts", "joules")  # amounts add up across series; ratios and temperatures average


@dataclass(frozen=True)
class Facts:
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
    grouped: tuple[str, ...] = ()  # a record's own grouping (`node:...:avg`: node)
    fixed: frozenset[str] = frozenset()  # labels the filters fix (they split nothing)

    @property
    def zero_one(self) -> bool:
        return self.help.startswith(("1 when", "1 while", "1 for")) or self.name.endswith("_up") or self.name == "up" \
            or ": 1 passed, 0 failed" in self.help or self.name.endswith(("_healthy", "_ok"))

    @property
    def amount(self) -> bool:
        return self.counter or self.counts_itself or self.unit in _SUMMED


def condition(expr: str, intent: Intent, facts: Facts, steps: list[str]) -> str:
    """A comparison the question states, or the one a "which ... down/have/had" question implies."""
    plain = not intent.rank and not intent.group_by and not intent.agg
    if intent.compare:
        op, value, unit_word = intent.compare
        if unit_word in ("%", "percent") and (facts.unit == "ratio" or facts.name.endswith("_ratio")
                                               or "probability" in facts.help):  # 0.15 % of a 0-1 figure
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
    counts = (facts.counter and not intent.rate) or (intent.smart is not None and intent.smart.counts) \
        or (facts.counts_itself and not intent.count)  # "any zombie processes left": the series above 0
    if (intent.which or (intent.listing and intent.smart)) and plain and counts:
        steps.append("a count: the series that counted any")
        return f"{expr} > 0"
    return expr


def wanted_group(intent: Intent, labels: frozenset[str] | None) -> tuple[str, ...]:
    """The labels the question groups by: asked ("per node"), or the entity a ranked "which node" asks for."""
    group = intent.group_by + tuple(w for w in intent.group_words if labels is not None and w in labels)
    if intent.rank and not group:
        group = coarser_entity(intent, labels)
    return group


def coarser_entity(intent: Intent, labels: frozenset[str] | None) -> tuple[str, ...]:
    """The labels of the thing a "which node"/"which scrape jobs" question asks for, when the series are
    finer (per GPU, per target); () otherwise."""
    wanted = ("job",) if intent.which == "job" and intent.scrape_jobs else _ENTITY_GROUP.get(intent.which or "")
    if not wanted:
        return ()
    finer = {"gpu", "device"} | ({"instance"} if wanted == ("job",) else set())
    if labels is None or (set(wanted) <= labels and labels & finer - set(wanted)):
        return wanted
    if set(wanted) <= _JOINED and labels is not None and {"node", "gpu"} <= labels:
        return wanted  # "which user holds the most GPU memory": per user, through the job's info
    return ()


def fraction_of_things(expr: str, kept: str, intent: Intent, facts: Facts, knowledge: Knowledge,
                       steps: list[str]) -> str | None:
    """"What fraction of all GPUs are <kept>": the ones kept over all of them (None: not such a question)."""
    if not (intent.scope.fraction and intent.scope.of_entities) or kept == expr:
        return None
    grouping = resolve(wanted_group(intent, facts.labels), facts.labels, knowledge)
    group = () if set(grouping.labels) & _FINE else grouping.labels
    steps.append("the fraction of them: those kept over all" + (f", per {', '.join(group)}" if group else ""))
    return count_fraction(joined(kept, grouping), joined(expr, grouping), group)


def aggregate(expr: str, intent: Intent, facts: Facts, knowledge: Knowledge, steps: list[str]) -> str:
    """Across series: count, by a grouping, or all."""
    labels = facts.labels
    grouping = resolve(wanted_group(intent, labels), labels, knowledge)
    group = grouping.labels
    steps.extend(grouping.why)
    per_entity = bool(group)
    if group and set(group) & _FINE and (labels is None or set(group) <= labels) and grouping.join is None:
        # "per GPU": one series each already; with an aggregation word ("total ECC errors of each GPU"), or a
        # counter ("ECC errors for each GPU": corrected and uncorrected add up), the series split by another
        # label (error_type) are aggregated per GPU
        splits = labels is not None and _splitting(labels, group, facts.fixed)
        finer = splits and splits - {"node", "instance", "link"}  # link="all": one total per GPU by default
        if not splits or not (intent.agg or (facts.counter and finer)):
            steps.append(f"the series are per {', '.join(group)} already")
            group = ()
    if group and set(group) == set(facts.grouped):
        steps.append(f"the record is per {', '.join(group)} already")
        group = ()
    if group and labels is not None and grouping.join is None and not intent.agg and not facts.counter \
            and not _splitting(labels, group, facts.fixed):
        steps.append(f"the series are per {', '.join(group)} already")  # node-level series "per node"
        group = ()
    expr = joined(expr, grouping) if group else expr
    if facts.filtered and not group and not intent.rank and not intent.count:
        group = coarser_entity(intent, labels)  # "which scrape jobs have a target down": count them per job
        if group:
            steps.append(f"count the kept series per {', '.join(group)}")
            return f"count{_by(group)}({expr})"
    # "how many GPUs had XID 79": the GPUs whose counter moved, counted; "how many XID errors": the sum
    if (intent.count or (facts.how_many and intent.which)) and not facts.counts_itself \
            and (not facts.counter or facts.filtered):
        steps.append("count the series" + (f" per {', '.join(group)}" if group else ""))
        return f"count{_by(group)}({expr})"
    if group:
        fn = intent.agg or ("count" if facts.name.startswith("ALERTS") or facts.filtered or facts.name.endswith("_info")
                            or (facts.how_many and facts.zero_one)  # "how many open incidents per team"
                            else "sum" if facts.amount else "avg")  # kept series ("down per job"): counted
        steps.append(f"{fn} per {', '.join(group)}")
        return f"{fn}{_by(group)}({expr})"
    recorded = facts.name.count(":") == 2 or bool(facts.grouped)  # a record's series are aggregated already
    if intent.agg and not intent.rank and not facts.single and not recorded and not per_entity:
        steps.append(f"{intent.agg} across the matching series")
        return f"{intent.agg}({expr})"
    if intent.scope.whole and not (intent.agg or intent.rank or facts.single or intent.which or intent.listing
                                   or facts.filtered or per_entity or recorded or intent.each_one):
        fn = natural_aggregation(facts.unit, facts.amount)
        steps.append(f"over the whole scope: {fn} ({'an amount adds up' if fn == 'sum' else 'a level averages'})")
        return f"{fn}({expr})"
    if facts.how_many and facts.zero_one and not intent.rank and not facts.single and not per_entity:
        steps.append("a 0/1 series per thing: counted")  # "how many incidents are open"
        return f"count({expr})"
    counted_here = intent.count and facts.counts_itself  # "how many GPU processes": the series count them
    if facts.amount and not intent.rank and not facts.single and (not intent.which or counted_here) \
            and not per_entity and (intent.window or intent.rate or facts.how_many) \
            and not (intent.each_one and not facts.how_many):
        steps.append("sum across the matching series")
        return f"sum({expr})"
    return expr


def _splitting(labels: frozenset[str], group: tuple[str, ...], fixed: frozenset[str]) -> set[str]:
    """The labels that split a group into several series (a node target has one instance)."""
    rest = set(labels) - {"uuid", "job"} - set(group) - fixed
    return rest - {"instance"} if "node" in group else rest


def record_grouping(expr: str | None) -> tuple[str, ...]:
    """The labels a record's expression aggregates by (`avg by (node) (...)`: node)."""
    match = re.match(r"\s*\w+\s+by\s*\(([^)]*)\)", expr or "")
    return tuple(label.strip() for label in match.group(1).split(",")) if match else ()


def _by(group: tuple[str, ...]) -> str:
    return f" by ({', '.join(group)}) " if group else ""


def single(labels: frozenset[str] | None, matchers: dict[str, str]) -> bool:
    """The filters name one entity: every entity label the metric has is fixed."""
    if labels is None:
        return False
    entity = [label for label in ENTITY_LABELS if label in labels]
    return bool(entity) and all(label in matchers and "|" not in matchers[label] for label in entity)
