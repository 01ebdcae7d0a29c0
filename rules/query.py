"""Parse one PromQL expression and say what it reads: the selectors, the labels it matches, groups and
joins on, the range of every `rate()`-like call, and the labels its result carries.

Parsing uses `promql-parser` (the Python binding of the Rust crate GreptimeDB maintains): a real
PromQL grammar, so a missing `)` is found before any rule file is written, at the spec's line.
The label arithmetic follows Prometheus' evaluation rules; `None` as a label set means "not known"
(a metric outside the catalog, or one whose labels are dynamic), and every check skips it.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Callable

import promql_parser as pp

# Functions whose result does not keep the labels of their first vector argument.
_ABSENT = ("absent", "absent_over_time")
_NO_LABELS = ("vector", "time", "scalar", "pi")
# Functions over a range whose window is bounded below by the scrape interval (pint: promql/rate).
RANGE_RATE_FUNCTIONS = ("rate", "irate", "increase", "delta", "idelta", "deriv", "resets", "changes",
                        "predict_linear")

LabelSet = frozenset[str] | None  # None: unknown

# Functions Prometheus 2.42 (the version vigil runs) has and the parser dropped: `holt_winters` became
# `double_exponential_smoothing` in Prometheus 3. The parser keeps extra functions process-wide.
_PROMETHEUS_2_FUNCTIONS = (("holt_winters", [pp.ValueType.Matrix, pp.ValueType.Scalar, pp.ValueType.Scalar]),)


@dataclass(frozen=True)
class Selector:
    """`name{matchers}` as written; `matchers` is ((label, op, value), ...)."""

    name: str | None
    matchers: tuple[tuple[str, str, str], ...]


@dataclass(frozen=True)
class LabelUse:
    """A label the query needs on the series below one place: `where` names the place (`on (...)`)."""

    label: str
    where: str
    sides: tuple[LabelSet, ...]  # each must hold the label (unknown sides are skipped)
    any_side: bool = False  # ignoring(): it must exist on at least one side


@dataclass
class Reading:
    """What one expression reads and does (the result of `read_query`)."""

    selectors: list[Selector] = field(default_factory=list)
    label_uses: list[LabelUse] = field(default_factory=list)
    ranges: list[tuple[str, float]] = field(default_factory=list)  # (function, window seconds)
    calls: list[str] = field(default_factory=list)  # functions and aggregations used
    output: LabelSet = None


class QuerySyntaxError(ValueError):
    """The expression is not valid PromQL; the message is the parser's."""


@functools.cache
def _register_prometheus_2_functions() -> None:
    missing = []
    for name, args in _PROMETHEUS_2_FUNCTIONS:
        try:
            pp.parse(f"{name}({', '.join('x[1m]' if t == pp.ValueType.Matrix else '1' for t in args)})")
        except ValueError:
            missing.append(pp.Function(name, args, pp.ValueType.Vector))
    if missing:
        pp.register_extra_functions(missing)


def parse(expr: str):
    """The AST of `expr`, or QuerySyntaxError with the parser's message."""
    _register_prometheus_2_functions()
    try:
        return pp.parse(expr)
    except ValueError as exc:
        raise QuerySyntaxError(str(exc).strip() or "invalid PromQL") from None


def read_query(expr: str, labels_of: Callable[[str], LabelSet]) -> Reading:
    """Parse `expr` and read it; `labels_of(metric)` gives a metric's labels (None: unknown)."""
    reading = Reading()
    reading.output = _Reader(labels_of, reading).labels(parse(expr))
    return reading


def _op_name(op) -> str:
    return str(op).strip().lower()


def _matcher_op(op) -> str:
    return {"Equal": "=", "NotEqual": "!=", "Re": "=~", "NotRe": "!~"}.get(str(op).split(".")[-1].split("(")[0],
                                                                          str(op))


def _is_scalar(node) -> bool:
    if isinstance(node, (pp.NumberLiteral, pp.StringLiteral)):
        return True
    if isinstance(node, pp.Call):
        return node.func.return_type == pp.ValueType.Scalar
    if isinstance(node, (pp.ParenExpr, pp.UnaryExpr)):
        return _is_scalar(node.expr)
    if isinstance(node, pp.BinaryExpr):
        return _is_scalar(node.lhs) and _is_scalar(node.rhs)
    return False


def _union(*sets: LabelSet) -> LabelSet:
    return None if any(s is None for s in sets) else frozenset().union(*sets)


class _Reader:
    def __init__(self, labels_of: Callable[[str], LabelSet], reading: Reading):
        self.labels_of = labels_of
        self.out = reading

    def labels(self, node) -> LabelSet:
        """The label names of `node`'s result, recording what it reads on the way."""
        if isinstance(node, pp.VectorSelector):
            return self._selector(node)
        if isinstance(node, pp.MatrixSelector):
            return self._selector(node.vector_selector)
        if isinstance(node, (pp.ParenExpr, pp.UnaryExpr, pp.SubqueryExpr)):
            return self.labels(node.expr)
        if isinstance(node, (pp.NumberLiteral, pp.StringLiteral)):
            return frozenset()
        if isinstance(node, pp.Call):
            return self._call(node)
        if isinstance(node, pp.AggregateExpr):
            return self._aggregate(node)
        if isinstance(node, pp.BinaryExpr):
            return self._binary(node)
        return None

    def _selector(self, node) -> LabelSet:
        matchers = tuple((m.name, _matcher_op(m.op), m.value) for m in node.matchers.matchers)
        name = node.name or next((v for n, o, v in matchers if n == "__name__" and o == "="), None)
        self.out.selectors.append(Selector(name, matchers))
        return self.labels_of(name) if name else None

    def _call(self, node) -> LabelSet:
        name = node.func.name
        self.out.calls.append(name)
        args = list(node.args)
        arg_labels = [self.labels(arg) for arg in args]
        if name in RANGE_RATE_FUNCTIONS and args and isinstance(args[0], (pp.MatrixSelector, pp.SubqueryExpr)):
            self.out.ranges.append((name, args[0].range.total_seconds()))
        if name in _ABSENT:
            inner = args[0].vector_selector if args and isinstance(args[0], pp.MatrixSelector) else (args or [None])[0]
            if isinstance(inner, pp.VectorSelector):
                return frozenset(m.name for m in inner.matchers.matchers
                                 if _matcher_op(m.op) == "=" and m.name != "__name__")
            return frozenset()
        if name in _NO_LABELS or node.func.return_type == pp.ValueType.Scalar:
            return frozenset()
        if name in ("label_replace", "label_join") and len(args) > 1 and isinstance(args[1], pp.StringLiteral):
            return _union(arg_labels[0], frozenset([args[1].val]))
        if name == "histogram_quantile" and len(arg_labels) > 1:
            return None if arg_labels[1] is None else arg_labels[1] - {"le"}
        vectors = [labels for arg, labels in zip(args, arg_labels) if not _is_scalar(arg)]
        return vectors[0] if vectors else frozenset()

    def _aggregate(self, node) -> LabelSet:
        inner = self.labels(node.expr)
        if node.param is not None:
            self.labels(node.param)
        op = _op_name(node.op)
        self.out.calls.append(op)
        modifier = node.modifier
        if op in ("topk", "bottomk", "limitk", "limit_ratio"):
            return inner
        if modifier is None:
            grouped: LabelSet = frozenset()
        elif modifier.type == pp.AggModifierType.By:
            for label in modifier.labels:
                self.out.label_uses.append(LabelUse(label, f"{op} by ({', '.join(modifier.labels)})", (inner,)))
            grouped = frozenset(modifier.labels)
        else:
            grouped = None if inner is None else inner - set(modifier.labels)
        if op == "count_values" and isinstance(node.param, pp.StringLiteral) and grouped is not None:
            grouped = grouped | {node.param.val}
        return grouped

    def _binary(self, node) -> LabelSet:
        lhs, rhs = self.labels(node.lhs), self.labels(node.rhs)
        if _is_scalar(node.lhs):
            return rhs
        if _is_scalar(node.rhs):
            return lhs
        op, modifier = _op_name(node.op), node.modifier
        matching = modifier.matching if modifier is not None else None
        on = matching is not None and matching.type == pp.LabelModifierType.Include
        names = list(matching.labels) if matching is not None else []
        if matching is not None and names:
            where = f"{'on' if on else 'ignoring'} ({', '.join(names)})"
            for label in names:
                self.out.label_uses.append(LabelUse(label, where, (lhs, rhs), any_side=not on))
        card = modifier.card if modifier is not None else pp.VectorMatchCardinality.OneToOne
        include = list(modifier.group_labels or []) if modifier is not None else []
        if op in ("and", "unless"):
            return lhs
        if op == "or":
            return None if lhs is None or rhs is None else lhs & rhs  # labels every result series has
        if card == pp.VectorMatchCardinality.ManyToOne:
            for label in include:
                self.out.label_uses.append(LabelUse(label, f"group_left ({', '.join(include)})", (rhs,)))
            return _union(lhs, frozenset(include))
        if card == pp.VectorMatchCardinality.OneToMany:
            for label in include:
                self.out.label_uses.append(LabelUse(label, f"group_right ({', '.join(include)})", (lhs,)))
            return _union(rhs, frozenset(include))
        if lhs is None:
            return None
        if matching is None:
            return lhs
        return lhs & set(names) if on else lhs - set(names)
