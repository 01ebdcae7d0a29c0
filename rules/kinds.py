"""Compact alert kinds and the PromQL each one expands to.

Every kind reads its own keys from the alert's mapping through a `Reader` (so unknown or missing keys
are reported with their line) and returns the expression, or None when its keys were invalid.
"""

from __future__ import annotations

import re
from types import MappingProxyType

from .located import Located
from .promql import label_list, selector
from .reader import Reader

BASELINE_UPPER = "vigil_baseline_upper"
BASELINE_LOWER = "vigil_baseline_lower"
_PLAIN_SELECTOR = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*(\{[^{}]*\})?$")


def _series(r: Reader) -> str | None:
    """`metric{selector}` from the keys `metric` and `selector`."""
    metric = r.metric("metric")
    labels = r.string_map("selector")
    if metric is None or labels is None:
        return None
    return selector(metric, labels)


def _expr(r: Reader) -> str | None:
    return r.text("expr", required=True)


def _threshold(r: Reader) -> str | None:
    series, op, value = _series(r), r.op("op"), r.number("value", required=True)
    if None in (series, op, value):
        return None
    return f"{series} {op} {value}"


def _flag(r: Reader, key: str, default: bool) -> bool | None:
    item: Located | None = r.raw(key)
    if item is None:
        return default
    if not isinstance(item.value, bool):
        r.errors.add(r.file, item.line, f"{r.what}: {key!r} must be true or false")
        return None
    return item.value


def _counter_increase(r: Reader) -> str | None:
    """Events counted by a counter within `window`, above `above` (default 0), optionally summed `by`.

    A counter series that is created by its first event (the usual way for per-XID counters) has no
    earlier sample, so `increase()` misses that first jump. With `new_series` (default true) a series
    that did not exist `window` ago counts with its whole value instead.
    """
    series, window = _series(r), r.duration("window", required=True)
    above = r.number("above") or "0"
    by = r.name_list("by")
    new_series = _flag(r, "new_series", True)
    if None in (series, window, new_series) or (r.has("by") and by is None):
        return None
    counted = f"increase({series}[{window}])"
    if new_series:
        counted = f"({series} unless {series} offset {window}) or {counted}"
    if by:
        return f"sum by ({label_list(by)}) ({counted}) > {above}"
    return f"({counted}) > {above}" if new_series else f"{counted} > {above}"


def _absent(r: Reader) -> str | None:
    series = _series(r)
    return None if series is None else f"absent({series})"


def _up(r: Reader) -> str | None:
    job = r.text("job", required=True)
    labels = r.string_map("selector")
    if job is None or labels is None:
        return None
    return f"{selector('up', {'job': job, **labels})} == 0"


def _operand(text: str) -> str:
    return text if _PLAIN_SELECTOR.match(text) else f"({text})"


def _ratio(r: Reader) -> str | None:
    """`numerator / denominator op value`, the denominator guarded by `> 0` (no division by zero)."""
    num, den = r.text("numerator", required=True), r.text("denominator", required=True)
    op, value = r.op("op"), r.number("value", required=True)
    on = r.name_list("on")
    if None in (num, den, op, value) or (r.has("on") and on is None):
        return None
    matching = f" on ({label_list(on)})" if on else ""
    return f"{_operand(num)} /{matching} ({_operand(den)} > 0) {op} {value}"


def _baseline(r: Reader) -> str | None:
    """The metric outside the AIOps baseline band published for it (`vigil_baseline_lower/upper`)."""
    metric, labels = r.metric("metric"), r.string_map("selector")
    series = selector(metric, labels) if metric is not None and labels is not None else None
    on = r.name_list("on") or (None if r.has("on") else ["node", "gpu"])
    side = r.choice("side", ("both", "below", "above")) or ("both" if not r.has("side") else None)
    if None in (metric, series, on, side):
        return None
    match = f"on ({label_list(on)}) group_left ()"
    below = f"{series} < {match} {selector(BASELINE_LOWER, {'metric': metric})}"
    above = f"{series} > {match} {selector(BASELINE_UPPER, {'metric': metric})}"
    if side == "below":
        return below
    if side == "above":
        return above
    return f"({below}) or ({above})"


KINDS = MappingProxyType({
    "expr": _expr,
    "threshold": _threshold,
    "counter_increase": _counter_increase,
    "absent": _absent,
    "up": _up,
    "ratio": _ratio,
    "baseline": _baseline,
})


def expand(kind: str, r: Reader) -> str | None:
    """The PromQL of one alert of `kind` (the caller has checked that the kind exists)."""
    return KINDS[kind](r)
