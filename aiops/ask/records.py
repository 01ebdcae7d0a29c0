"""A recorded series over a window is read from the raw series it records (docs/ask.md "Records").

A recording rule only has samples since it was loaded (a new stack, a rule added last week), while the
series it is computed from keep their whole history: `avg_over_time(node:vigil_gpu_utilization:avg[1h])`
on a stack up for ten minutes averages ten minutes and calls it an hour. So a question over a window that
lands on a record gets the record's expression with the window taken on the measured raw series inside:
"average GPU utilization per node over the last hour" is
`avg by (node) (avg_over_time(vigil_gpu_utilization_ratio[1h]))`, and the explanation says which series
is read. A record whose expression already holds a window, an offset or a subquery keeps the record.
"""

from __future__ import annotations

import re

from .knowledge import Knowledge

_NAME = re.compile(r"(?<![\w:\"'])([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?(?!\s*\()")
_NOT_PUSHABLE = re.compile(r"\[|\boffset\b|@")
_MAX_DEPTH = 3


def inline_records(expr: str, knowledge: Knowledge, depth: int = 0) -> str | None:
    """`expr` with every record it reads replaced by the record's expression (None: a record carries a
    matcher, or records nest too deep)."""
    if depth > _MAX_DEPTH:
        return None
    failed = False

    def swap(match: re.Match) -> str:
        nonlocal failed
        name, braces = match.group(1), match.group(2)
        inner = knowledge.records.get(name)
        if inner is None:
            return match.group(0)
        if braces:  # a matcher on the record: keep it, nothing to push it onto safely
            failed = True
            return match.group(0)
        inlined = inline_records(inner, knowledge, depth + 1)
        if inlined is None:
            failed = True
            return match.group(0)
        return f"({inlined})"
    result = _NAME.sub(swap, expr)
    return None if failed else result


def measured_series(record: str, expr: str, knowledge: Knowledge) -> str | None:
    """The raw gauge a record measures: the series in its expression named like the record's middle part
    (`node:vigil_gpu_utilization:avg` measures `vigil_gpu_utilization_ratio`)."""
    parts = record.split(":")
    if len(parts) != 3:
        return None
    names = [m.group(1) for m in _NAME.finditer(expr) if m.group(1) in knowledge.metrics]
    for name in names:
        doc = knowledge.metrics[name]
        if name.startswith(parts[1]) and not doc.is_counter and name not in knowledge.records:
            return name
    return None


def raw_over_window(record: str, fn: str, window: str, matchers: dict[str, str],
                    knowledge: Knowledge) -> tuple[str, str] | None:
    """(query, the raw series read) for `fn` over `window` of a record, taken on its raw series; None
    when the record cannot be read that way (it has a window of its own, or no raw gauge to push into)."""
    expr = knowledge.records.get(record)
    if expr is None:
        return None
    inlined = inline_records(expr, knowledge)
    if inlined is None or _NOT_PUSHABLE.search(inlined):
        return None
    raw = measured_series(record, inlined, knowledge)
    if raw is None:
        return None

    def rewrite(match: re.Match) -> str:
        name, braces = match.group(1), match.group(2) or ""
        if name not in knowledge.metrics:
            return match.group(0)
        labels = knowledge.labels(name)
        own = [b.strip() for b in braces.strip("{}").split(",") if b.strip()]
        added = [f'{label}="{value}"' for label, value in sorted(matchers.items())
                 if labels is None or label in labels]
        selector = name + ("{" + ", ".join(own + added) + "}" if own or added else "")
        return f"{fn}_over_time({selector}[{window}])" if name == raw else selector
    return _NAME.sub(rewrite, inlined), raw
