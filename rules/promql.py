"""Small, pure PromQL building blocks: names, label selectors and numbers (durations: `vigil.common.durations`).

Everything here formats deterministically, so the same spec always produces byte-identical rules.
"""

from __future__ import annotations

import math
import re

METRIC_NAME = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*$")
LABEL_NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")
ALERT_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")
COMPARISONS = ("==", "!=", ">", ">=", "<", "<=")

_MATCH_OPS = ("!=", "=~", "!~", "=")


def format_number(value: int | float) -> str:
    """A number as PromQL text: integers without a decimal point, others by their shortest repr."""
    if isinstance(value, bool):
        raise ValueError("a boolean is not a number")
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            raise ValueError("NaN and infinity are not allowed as thresholds")
        if value.is_integer() and abs(value) < 1e15:
            return str(int(value))
        return repr(value)
    return str(value)


def quote(value: str) -> str:
    """A PromQL double-quoted string literal."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def matcher(label: str, spec: str) -> str:
    """One label matcher from a compact value: `x` (equal), `!=x`, `=~re`, `!~re`."""
    for op in _MATCH_OPS:
        if spec.startswith(op):
            return f"{label}{op}{quote(spec[len(op):])}"
    return f"{label}={quote(spec)}"


def selector(metric: str, labels: dict[str, str]) -> str:
    """`metric{a="x", b!~"y"}` (or just `metric` without labels); labels keep the author's order."""
    if not labels:
        return metric
    return metric + "{" + ", ".join(matcher(k, v) for k, v in labels.items()) + "}"


def label_list(labels: list[str] | tuple[str, ...]) -> str:
    return ", ".join(labels)
