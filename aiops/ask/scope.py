"""Scope words: over what a figure is taken ("each GPU", "per node", "of the fleet", "what fraction of all
GPUs"), and the shapes they give a query (docs/ask.md "Scope words").

- a ratio of two amounts (used / total memory, power / limit) over a scope is the ratio of the sums, never
  a sum or an average of per-GPU ratios: "what fraction of all GPU memory is used" is
  `sum(used) / sum(total)`, "... on each node" `sum by (node) (used) / sum by (node) (total)`, and "each
  GPU" keeps one ratio per GPU;
- "what fraction of all GPUs are <state>" counts: `count(<kept>) / count(<all>)`;
- "what share of the fleet's <amount> does each node <...>" divides each group's sum by the whole's:
  `sum by (node) (x) / ignoring (node) group_left () sum(x)`;
- "overall", "fleet-wide", "of the whole cluster" without an aggregation word take the natural one: a sum
  for amounts (bytes, watts, joules, counts), an average for ratios and temperatures.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_FRACTION = re.compile(r"\b(?:fraction|percent|percentage|share|proportion|ratio|relative to|versus|vs)\b")
_WHOLE = re.compile(r"\b(?:overall|fleet-wide|cluster-wide|as a whole|in total|altogether|all together|together|combined|of all|across all|"
                    r"(?:whole|entire)\s+(?:fleet|cluster)|(?:of|in|across)\s+the\s+(?:fleet|cluster)|"
                    r"(?:the\s+)?(?:fleet|cluster)'s)\b")
_FLEET = re.compile(r"\b(?:fleet|cluster|all (?:the |our )?(?:gpus|nodes))\b")  # the whole a part is taken of
_POSSESSIVE_ONE = re.compile(r"\b(?:node|host)-?\d+'s\b")
# "of that node's memory", "of its limit": the denominator is each one's own ("each node's share of the
# fleet's power" names the share's owner, not the denominator)
_OWN = re.compile(r"\bof\s+(?:(?:that|this|each|every)\s+\w+'s|its|their)\b|\bown\b")
_OF_ENTITIES = re.compile(r"\b(?:fraction|percent|percentage|share|proportion|ratio)\s+of\s+(?:all\s+)?(?:the\s+)?"
                          r"(?:\w+'s\s+)?(?:\w+\s+)?(gpus|cards|nodes|hosts|machines|servers|disks|drives|devices|"
                          r"targets)\b")
_ENTITY = {"gpus": "gpu", "cards": "gpu", "nodes": "node", "hosts": "node", "machines": "node", "servers": "node",
           "disks": "device", "drives": "device", "devices": "device", "targets": "target"}
_SUMMED_UNITS = ("bytes", "watts", "joules")


@dataclass(frozen=True)
class Scope:
    whole: bool = False  # aggregate all that the filters and the grouping leave
    fraction: bool = False  # a fraction, percentage or share is asked
    own: bool = False  # "that node's", "its": a ratio within each group, not of the whole
    of_entities: str | None = None  # "what fraction of all GPUs ...": the things counted


def says_whole(text: str) -> bool:
    """The question names the whole ("of the fleet", "overall"), not only one thing's share ("node-1's")."""
    return bool(_WHOLE.search(text))


def read_scope(text: str) -> Scope:
    fraction = bool(_FRACTION.search(text))
    whole = bool(_WHOLE.search(text)) or bool(fraction and _POSSESSIVE_ONE.search(text))
    counted = _OF_ENTITIES.search(text)
    return Scope(whole, fraction, bool(_OWN.search(text)), _ENTITY[counted.group(1)] if counted else None)


def _by(group: tuple[str, ...]) -> str:
    return f" by ({', '.join(group)}) " if group else ""


def _finest(labels: frozenset[str] | None) -> str | None:
    for label in ("gpu", "device", "mountpoint", "node"):
        if labels is not None and label in labels:
            return label
    return None


def is_share(scope: Scope, group: tuple[str, ...], question: str, denominators: list[str]) -> bool:
    """Each group's part of the whole ("what share of the fleet's power does each node draw"), unless the
    question names the measure's own denominator ("of its limit") or says "that node's"."""
    return bool(group) and scope.fraction and scope.whole and not scope.own and not _names(denominators, question)


def _names(denominators: list[str], question: str) -> bool:
    """The question names the measure's own denominator ("of its limit", "used vs total"); "the total GPU
    memory in use" names the whole's amount, not the capacity."""
    return any(re.search(rf"\b{re.escape(word)}(?!(?:\s+\w+){{0,3}}\s+(?:in use|used|drawn|consumed)\b)", question)
               for word in denominators)


def scoped_ratio(measure: dict, parts: list[str], group: tuple[str, ...], scope: Scope, single: bool,
                 question: str, summed: bool) -> tuple[str, str] | None:
    """(query, why) for a derived ratio over a scope, or None when it stays one ratio per series.
    `summed`: the question says "total"; unless that names the ratio's own denominator ("used vs total
    memory"), the whole scope is meant."""
    named = _names(measure.get("of", []), question)
    if is_share(scope, group, question, measure.get("of", [])):
        return share_of_whole(parts[0], group), f"each {', '.join(group)}'s share of the whole"
    scope = Scope(scope.whole or (summed and not named), scope.fraction, scope.own, scope.of_entities)
    finest = _finest(frozenset(measure["labels"]))
    if group and finest not in group:
        return (measure["expr"].format(*[f"sum{_by(group)}({part})" for part in parts]),
                f"the ratio of the sums per {', '.join(group)} (not an average of per-{finest} ratios)")
    if scope.whole and not group and not single:
        return (measure["expr"].format(*[f"sum({part})" for part in parts]),
                "the ratio of the sums over the whole scope (not a sum of per-series ratios)")
    return None


def part_of_whole(question: str, scope: Scope, filtered: bool, denominators: list[str]) -> bool:
    """"What share of the cluster's used GPU memory is on node-2": the filtered part over the whole fleet's
    (not the part's own ratio), when the question names the whole and the filters pick a part of it."""
    return filtered and scope.fraction and not scope.own and bool(_FLEET.search(question)) \
        and not _names(denominators, question)


def share_of_whole(expr: str, group: tuple[str, ...]) -> str:
    return f"sum{_by(group)}({expr}) / ignoring ({', '.join(group)}) group_left () sum({expr})"


def count_fraction(kept: str, every: str, group: tuple[str, ...], fn: str = "count") -> str:
    """'What fraction of all GPUs are <state>': those kept over all of them (`fn` sum: "what fraction of
    the deliveries failed": the failed ones' sum over all of them)."""
    return f"{fn}{_by(group)}({kept}) / {fn}{_by(group)}({every})"


def natural_aggregation(unit: str, amount: bool) -> str:
    """The aggregation a whole-scope figure takes without an aggregation word."""
    return "sum" if amount or unit in _SUMMED_UNITS else "avg"
