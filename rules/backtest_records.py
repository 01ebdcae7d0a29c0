"""Recording rules in a backtest: an alert that reads a series recorded by the specs' own recording rules
is evaluated with the recording rule's expression in its place, so a new or changed recording rule is
backtested too, over history recorded before it was deployed (or never).

Prometheus evaluates a group's recording rules before its alerts at the same instant, so an alert that
reads the recorded series *as an instant vector* sees exactly the recording expression's value at that
instant: `name` → `(expr)`, with the recording rule's labels set by `label_replace`. A read with label
matchers (`name{node="a"}`), a range (`name[5m]`) or an offset cannot be inlined like that; it reads the
recorded series from the server's history, and the backtest says so.

Only names with a colon are inlined (the Prometheus naming convention for recorded series,
`level:metric:operations`): a colon cannot appear in a label or function name, so the text
substitution cannot hit one of those.
"""

from __future__ import annotations

import re
from typing import Protocol, Sequence

from .promql import quote
from .query import QuerySyntaxError, parse

MAX_DEPTH = 5  # recording rules reading recording rules: inlined this many levels deep at most


class RecordingLike(Protocol):
    name: str
    expr: str
    labels: tuple[tuple[str, str], ...]


def _reference(name: str) -> re.Pattern:
    return re.compile(rf"(?<![\w:]){re.escape(name)}(?![\w:])")


def _outside_strings(text: str, position: int) -> bool:
    """True when `position` is not inside a quoted string of `text` (an even number of quotes before it)."""
    quotes = re.findall(r'(?<!\\)["\'`]', text[:position])
    return len(quotes) % 2 == 0


def _replacement(record: RecordingLike) -> str:
    inner = f"({record.expr})"
    for label, value in record.labels:
        inner = f'label_replace({inner}, {quote(label)}, {quote(value)}, "", "")'
    return inner


def _inline_once(expr: str, record: RecordingLike) -> str:
    out, last = [], 0
    for match in _reference(record.name).finditer(expr):
        after = expr[match.end():].lstrip()
        if not _outside_strings(expr, match.start()) or after.startswith(("{", "[")) or re.match(r"offset\b|@", after):
            continue
        out += [expr[last:match.start()], _replacement(record)]
        last = match.end()
    return "".join(out) + expr[last:]


def inline_records(expr: str, records: Sequence[RecordingLike]) -> tuple[str, list[str]]:
    """(`expr` with every instant read of a colon-named recorded series of `records` replaced by its
    recording expression, the names of `records` it still reads from history, sorted)."""
    inlined = expr
    for _ in range(MAX_DEPTH):
        before = inlined
        for record in records:
            if ":" in record.name:
                inlined = _inline_once(inlined, record)
        if inlined == before:
            break
    try:
        parse(inlined)
    except QuerySyntaxError:  # cannot happen for valid rules; never evaluate something else than the rule
        inlined = expr
    return inlined, sorted({r.name for r in records if _reads(inlined, r.name)})


def _reads(expr: str, name: str) -> bool:
    return any(_outside_strings(expr, m.start()) for m in _reference(name).finditer(expr))
