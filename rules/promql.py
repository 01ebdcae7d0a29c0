"""Small, pure PromQL building blocks: names, label selectors, numbers and durations.

Everything here formats deterministically, so the same spec always produces byte-identical rules.
"""

from __future__ import annotations

import math
import re

METRIC_NAME = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*$")
LABEL_NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")
ALERT_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")
COMPARISONS = ("==", "!=", ">", ">=", "<", "<=")

# Prometheus durations: units in decreasing order, each at most once, e.g. "1h30m", "500ms"
_DURATION = re.compile(r"^(?:(\d+)y)?(?:(\d+)w)?(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?(?:(\d+)ms)?$")
_UNIT_SECONDS = (("y", 365 * 86400), ("w", 7 * 86400), ("d", 86400), ("h", 3600), ("m", 60), ("s", 1))
_MATCH_OPS = ("!=", "=~", "!~", "=")


def parse_duration(text: str) -> float:
    """Seconds in a Prometheus duration such as `5m` or `1h30m`; ValueError if it is not one."""
    match = _DURATION.match(text)
    if not text or not match:
        raise ValueError(f"{text!r} is not a Prometheus duration (like 30s, 5m, 1h30m)")
    parts = [int(g) if g else 0 for g in match.groups()]
    seconds = sum(count * unit for count, (_, unit) in zip(parts[:6], _UNIT_SECONDS))
    return seconds + parts[6] / 1000


def format_duration(seconds: float) -> str:
    """The canonical Prometheus duration for `seconds` (largest units first; `0s` for zero)."""
    millis = round(seconds * 1000)
    if millis <= 0:
        return "0s"
    out = []
    whole, millis = divmod(millis, 1000)
    for suffix, unit in _UNIT_SECONDS:
        count, whole = divmod(whole, unit)
        if count:
            out.append(f"{count}{suffix}")
    if millis:
        out.append(f"{millis}ms")
    return "".join(out)


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
