"""Which rules a Prometheus shard can evaluate on its own part of the fleet, and which need the global view.

A shard holds every series of its nodes and none of the others' (`hashmod` splits by target, one
target per node). A rule is *local* when each result series depends on one node's series only:
no aggregation across nodes (every `by` keeps `node` or `instance`, no `without` drops them), no
`on (...)` join without `node`/`instance`, no `absent()` (a shard cannot tell "absent everywhere"),
at least one selector (a `vector(1)` heartbeat would fire once per shard), and no input recorded by a
global rule. Everything else is *global*: it runs once, over VictoriaMetrics (vmalert) or a global
Prometheus, reading what the shards remote-write, local recording rules' results included.
"""

from __future__ import annotations

from collections.abc import Collection
from copy import deepcopy
from dataclasses import dataclass, field

import promql_parser as pp

from vigil.rules.query import parse

NODE_LABELS = frozenset({"node", "instance"})
_ABSENT = frozenset({"absent", "absent_over_time"})


@dataclass
class _Uses:
    selectors: set[str] = field(default_factory=set)
    reasons: list[str] = field(default_factory=list)


def _walk(node, uses: _Uses) -> None:
    if isinstance(node, pp.VectorSelector):
        name = node.name or next((m.value for m in node.matchers.matchers if m.name == "__name__"), None)
        uses.selectors.add(name or "")
    elif isinstance(node, pp.MatrixSelector):
        _walk(node.vector_selector, uses)
    elif isinstance(node, (pp.ParenExpr, pp.UnaryExpr, pp.SubqueryExpr)):
        _walk(node.expr, uses)
    elif isinstance(node, pp.Call):
        if node.func.name in _ABSENT:
            uses.reasons.append(f"{node.func.name}()")
        for arg in node.args:
            _walk(arg, uses)
    elif isinstance(node, pp.AggregateExpr):
        op, modifier = str(node.op).strip().lower(), node.modifier
        if modifier is None:
            uses.reasons.append(f"{op} over every node")
        elif modifier.type == pp.AggModifierType.By and not NODE_LABELS & set(modifier.labels):
            uses.reasons.append(f"{op} by ({', '.join(modifier.labels)})")
        elif modifier.type != pp.AggModifierType.By and NODE_LABELS & set(modifier.labels):
            uses.reasons.append(f"{op} without ({', '.join(modifier.labels)})")
        _walk(node.expr, uses)
        if node.param is not None:
            _walk(node.param, uses)
    elif isinstance(node, pp.BinaryExpr):
        matching = node.modifier.matching if node.modifier is not None else None
        if matching is not None and matching.type == pp.LabelModifierType.Include \
                and not NODE_LABELS & set(matching.labels):
            uses.reasons.append(f"on ({', '.join(matching.labels)})")
        _walk(node.lhs, uses)
        _walk(node.rhs, uses)


def global_reasons(rules: list[dict], global_metrics: Collection[str] = ()) -> dict[str, str]:
    """{rule name: why it needs the global view} for the rules (`record`/`alert` + `expr` dicts) that do;
    the others are local. A rule reading a global rule's record is global too (to a fixed point).
    `global_metrics` are metric names (exact) no shard is sure to hold beside the nodes they describe (in
    Kubernetes the operator hashes the AIOps service's own target like any other): a rule reading one
    is global too."""
    read: dict[str, _Uses] = {}
    found: dict[str, str] = {}
    for rule in rules:
        name = rule.get("record") or rule["alert"]
        uses = read[name] = _Uses()
        _walk(parse(rule["expr"]), uses)
        if not uses.selectors:
            uses.reasons.append("no series read (one result per shard)")
        elsewhere = sorted(uses.selectors & set(global_metrics))
        if elsewhere:
            uses.reasons.append(f"reads {elsewhere[0]}, which may be scraped by another shard")
        if uses.reasons:
            found[name] = uses.reasons[0]
    changed = True
    while changed:
        changed = False
        for name, uses in read.items():
            inputs = sorted(uses.selectors & set(found))
            if name not in found and inputs:
                found[name], changed = f"reads the global record {inputs[0]}", True
    return found


def split_rule_file(doc: dict, global_metrics: Collection[str] = ()) -> tuple[dict, dict, dict[str, str]]:
    """A rule file (`{"groups": [...]}`) as (shard rules, global rules, {global rule: reason}); each keeps
    the group names and intervals, and a group left empty on one side is dropped from it."""
    rules = [rule for group in doc["groups"] for rule in group["rules"]]
    reasons = global_reasons(rules, global_metrics)
    shard, glob = {"groups": []}, {"groups": []}
    for group in doc["groups"]:
        for side, keep in ((shard, False), (glob, True)):
            part = [deepcopy(r) for r in group["rules"] if ((r.get("record") or r["alert"]) in reasons) == keep]
            if part:
                side["groups"].append({**{k: v for k, v in group.items() if k != "rules"}, "rules": part})
    return shard, glob, reasons
