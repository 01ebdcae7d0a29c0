"""Compact alert kinds and the PromQL each one expands to.

Every kind reads its own keys from the alert's mapping through a `Reader` (so unknown or missing keys
are reported with their line) and returns the expression, or None when its keys were invalid.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from types import MappingProxyType

from vigil.common.durations import parse_prometheus_duration

from .kinds_job import on_job
from .kinds_xid import xid_counted
from .located import Located
from .promql import format_number, label_list, selector
from .reader import Reader
from .xid_catalog import hardware_suspect_xids, with_action_label, xid_regex

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


def _new_or_increase(series: str, window: str) -> str:
    """A series that did not exist `window` ago counts with its whole value, else its `increase()`."""
    return f"({series} unless {series} offset {window}) or increase({series}[{window}])"


def _counter_increase(r: Reader, counted_with_new: Callable[[str, str], str] = _new_or_increase) -> str | None:
    """Events counted by a counter within `window`, above `above` (default 0), optionally summed `by`.

    A counter series that is created by its first event (the usual way for per-XID counters) has no
    earlier sample, so `increase()` misses that first jump. With `new_series` (default true) a series
    that did not exist `window` ago counts with its whole value instead (`counted_with_new`: XID
    counters also count one back after an exporter restart, `rules.kinds_xid`).
    """
    series, window = _series(r), r.duration("window", required=True)
    above = r.number("above") or "0"
    by = r.name_list("by")
    new_series = _flag(r, "new_series", True)
    if None in (series, window, new_series) or (r.has("by") and by is None):
        return None
    counted = counted_with_new(series, window) if new_series else f"increase({series}[{window}])"
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


def _seconds(r: Reader, key: str) -> str | None:
    """A required duration key as a number of seconds in PromQL text (for `time()` and `predict_linear`)."""
    value = r.duration(key, required=True)
    return None if value is None else format_number(parse_prometheus_duration(value))


def _fill_prediction(r: Reader) -> str | None:
    """A capacity gauge (`metric`, e.g. free bytes) predicted to reach 0 within `horizon` from `window` of history.

    With `size` and `free_below`: only while `metric / size` is already below `free_below`, so a young,
    nearly empty volume that is being filled fast does not page; the alert's value is then that fraction.
    """
    metric, labels = r.metric("metric"), r.string_map("selector")
    window, horizon = r.duration("window", required=True), _seconds(r, "horizon")
    size, free_below = r.metric("size", required=False), r.number("free_below")
    if (size is None) != (free_below is None):
        r.error("size" if size is not None else "free_below", f"{r.what}: 'size' and 'free_below' go together")
        return None
    if None in (metric, labels, window, horizon):
        return None
    series = selector(metric, labels)
    predicted = f"predict_linear({series}[{window}], {horizon}) < 0"
    if size is None:
        return predicted
    fraction = f"{series} / ({selector(size, labels)} > 0) < {free_below}"
    return f"({fraction}) and ({predicted})"


def _grows(r: Reader) -> str | None:
    """A gauge that only grows when something degrades (SMART raw counts) is higher than `window` ago.

    Two samples per series, not a range: cheap over every disk of a fleet. A series without a sample
    `window` ago (a new disk) does not fire.
    """
    series, window = _series(r), r.duration("window", required=True)
    if None in (series, window):
        return None
    return f"{series} > {series} offset {window}"


def _stale(r: Reader) -> str | None:
    """A Unix-time gauge (`metric`: last success, heartbeat) older than `max_age`."""
    series, max_age = _series(r), _seconds(r, "max_age")
    if None in (series, max_age):
        return None
    return f"time() - {series} > {max_age}"


def _xid_events(r: Reader) -> str | None:
    """`counter_increase` of an XID counter, a counter back after an exporter restart counted as new
    (`rules.kinds_xid`), with the catalogue's `action` label (`rules.xid_catalog`)."""
    expr = _counter_increase(r, xid_counted)
    return None if expr is None else with_action_label(expr)


def _hardware_xid_events(r: Reader) -> str | None:
    """Per GPU, 1 when an XID that points at the hardware (`rules.xid_catalog`) came in the last `window`
    (a rise of its counter, or its series appearing: `rules.kinds_xid`), else no series."""
    metric, labels = r.metric("metric"), r.string_map("selector")
    window = r.duration("window", required=True)
    if None in (metric, labels, window):
        return None
    series = selector(metric, {**labels, "xid": "=~" + xid_regex(hardware_suspect_xids())})
    return f"sum by (node, gpu, uuid) ({xid_counted(series, window)}) > 0"


def _xid_occasions(r: Reader) -> str | None:
    """A recording rule of `_hardware_xid_events`: evaluated every minute, it keeps one small series per
    GPU while a hardware XID is within `window`, which `xid_recurring` with `occasions_record` counts
    over days instead of re-reading every XID series at every step of them."""
    return _hardware_xid_events(r)


def _xid_recurring(r: Reader) -> str | None:
    """XIDs that point at the hardware (`rules.xid_catalog`) on one GPU in at least `occasions` separate
    `window`s within `over`: a reset or reboot did not cure it.

    A window counts when the counter rose in it or its series appeared (after a reboot the exporter
    starts again and the counter comes back with the next event, so `increase()` over `over` alone
    would miss the repeats): `rules.kinds_xid`. With `occasions_record` (a record of kind
    `xid_occasions` with the same window, in the same group), the occasions are read from it: the cost
    of an evaluation grows with the GPUs that had an XID, not with every XID series times `over`."""
    over, occasions = r.duration("over", required=True), r.number("occasions", required=True)
    window = r.duration("window", required=True)
    record = r.metric("occasions_record", required=False)
    events = record if record is not None else _hardware_xid_events(r)
    if None in (events, window, over, occasions):
        return None
    return f"count_over_time(({events})[{over}:{window}]) >= {occasions}"


def _job_xid(r: Reader) -> str | None:
    """`xid_events` joined to the job holding the GPU and to its owner (`rules.kinds_job`)."""
    events = _xid_events(r)
    return None if events is None else on_job(events, r.duration("window"))


KINDS = MappingProxyType({
    "expr": _expr,
    "threshold": _threshold,
    "counter_increase": _counter_increase,
    "absent": _absent,
    "up": _up,
    "ratio": _ratio,
    "baseline": _baseline,
    "fill_prediction": _fill_prediction,
    "grows": _grows,
    "stale": _stale,
    "xid_events": _xid_events,
    "xid_recurring": _xid_recurring,
    "xid_occasions": _xid_occasions,
    "job_xid": _job_xid,
})


def expand(kind: str, r: Reader) -> str | None:
    """The PromQL of one alert of `kind` (the caller has checked that the kind exists)."""
    return KINDS[kind](r)


PROMQL_KEYS = ("expr", "numerator", "denominator")  # keys whose value is PromQL as the author wrote it


def read_expression(r: Reader) -> tuple[str | None, str | None]:
    """(kind, PromQL) of an alert's or a record's mapping: a compact `kind` and its keys, or `expr`.

    Without a valid kind its keys cannot be checked: they are all marked seen, so the one error is not
    followed by an "unknown key" for each of them."""
    if r.has("kind"):
        kind = r.choice("kind", tuple(KINDS))
    elif r.has("expr"):
        kind = "expr"
    else:
        kind = None
        r.error(None, f"{r.what}: needs 'expr' or a 'kind' ({', '.join(KINDS)})")
    expr = expand(kind, r) if kind else None
    if kind is None:
        r.seen.update(r.node.value)
    return kind, expr


def promql_pieces(r: Reader) -> tuple[tuple[int, str], ...]:
    """(line, text) of each key whose value is PromQL as the author wrote it: where lint reports syntax."""
    return tuple((r.line(key), r.node.value[key].value) for key in PROMQL_KEYS
                 if r.has(key) and isinstance(r.node.value[key].value, str))
