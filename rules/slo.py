"""The `slos:` section of a spec file → the multiwindow, multi-burn-rate rules of the SRE workbook.

One SLO (an objective in percent over 30 days and an SLI) becomes seven recording rules, the error
ratio over 5m, 30m, 1h, 2h, 6h, 1d and 3d (`slo:<name>_errors:ratio_rate<window>`), and two alerts:

- `<Name>ErrorBudgetBurnFast` (critical, a page): 14.4× the budget's rate over 1h and 5m, or 6× over
  6h and 30m (2% of a 30-day budget spent in an hour, 5% in six hours);
- `<Name>ErrorBudgetBurnSlow` (warning, a ticket): 3× over 1d and 2h, or 1× over 3d and 6h.

The short window of each pair makes the alert stop soon after the burn stops. The fast alert mutes
the slow one of the same SLO. The SLI is one of `errors`/`total` (counters), `latency` (a histogram
and the bucket bound `le` a good event stays under) or `up` (a 0/1 gauge: the share of samples at 1;
its ratios read two records of the gauge's fleet-wide sum and count, `slo:<name>_up:sum|count`, both
taken from one record of how many samples hold each value, `slo:<name>_up:by_value`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation

from vigil.common.durations import parse_prometheus_duration

from .causes import CAUSE_KEYS, read_links
from .lint_alert import AlertLint, LintContext, lint_alert
from .loader_records import linted_record
from .located import ErrorLog, Located
from .model import Alert, Inhibition, Recording
from .promql import ALERT_NAME, format_number, selector
from .reader import Reader

WINDOWS = ("5m", "30m", "1h", "2h", "6h", "1d", "3d")
# (alert suffix, severity, [(burn rate, long window, short window)], what it means: "page: …" or
# "ticket: …", the word before the colon is the alert's `notify`)
TIERS = (
    ("ErrorBudgetBurnFast", "critical", ((Decimal("14.4"), "1h", "5m"), (Decimal(6), "6h", "30m")),
     "page: at this rate the 30-day error budget is gone within 5 days (2 at 14.4x)"),
    ("ErrorBudgetBurnSlow", "warning", ((Decimal(3), "1d", "2h"), (Decimal(1), "3d", "6h")),
     "ticket: at this rate the 30-day error budget runs out before the 30 days are over"),
)
_SLI_KINDS = ("errors", "latency", "up")


@dataclass
class Expanded:
    records: list[Recording] = field(default_factory=list)
    alerts: list[Alert] = field(default_factory=list)
    inhibitions: list[tuple[int, Inhibition]] = field(default_factory=list)


def snake(name: str) -> str:
    """`NotifierPageDelivery` → `notifier_page_delivery`."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()


def record_name(slo: str, window: str) -> str:
    return f"slo:{snake(slo)}_errors:ratio_rate{window}"


def since_name(slo: str) -> str:
    """The record of when the SLO's rules began to be evaluated (Unix seconds; see `since_record`)."""
    return f"slo:{snake(slo)}_evaluated:since_timestamp_seconds"


# a gap in evaluation longer than this (Prometheus down, the SLO new) starts the SLO's history again
SINCE_GAP = "10m"


def since_record(slo: str, labels: tuple[tuple[str, str], ...], file: str, line: int) -> Recording:
    """Remembers when the SLO's rules began to be evaluated: the record's own last value while it is
    recent, else now. A burn alert fires only once the rules have run for its short window, so a fresh
    Prometheus (minutes of data read as an hour's ratio) pages nobody."""
    name = since_name(slo)
    return Recording(name=name, expr=f'last_over_time({name}{{slo="{slo}"}}[{SINCE_GAP}]) or on () vector(time())',
                     labels=labels, file=file, line=line)


def slo_record_names(node: Located | None) -> list[str]:
    if node is None or not node.is_map():
        return []
    return [record for name in node.value if isinstance(name, str) and ALERT_NAME.match(name)
            for record in (*(record_name(name, w) for w in WINDOWS), since_name(name))]


def load_slos(node: Located, file: str, errors: ErrorLog, lint_ctx: LintContext, default_labels: dict[str, str],
              runbook_base: str) -> Expanded:
    out = Expanded()
    if not node.is_map() or not node.value:
        errors.add(file, node.line, "'slos' must be a mapping of SLO name: {objective, sli, what, description}")
        return out
    for name, item in node.value.items():
        line = node.key_lines[name]
        if not ALERT_NAME.match(str(name)):
            errors.add(file, line, f"SLO name {name!r} must start with a letter and hold only letters, digits, _")
        elif not item.is_map():
            errors.add(file, line, f"slo {name}: must be a mapping (objective, sli, what, description)")
        else:
            _load_slo(str(name), Reader(item, file, errors, f"slo {name}", line=line), lint_ctx, default_labels,
                      runbook_base, out)
    return out


def _load_slo(name: str, r: Reader, lint_ctx: LintContext, default_labels: dict[str, str], runbook_base: str,
              out: Expanded) -> None:
    budget = _budget(r)
    sli = _sli(r)
    what, action = r.text("what", required=True), r.text("description", required=True)
    labels = r.string_map("labels")
    fast, slow = (f"{name}{suffix}" for suffix, *_ in TIERS)
    out.inhibitions += read_links(r, [fast, slow], CAUSE_KEYS)
    for reserved in ("alertname", "severity", "slo"):
        if labels and reserved in labels:
            r.error("labels", f"{r.what}: label {reserved!r} is set by the generator, not in 'labels'")
    r.unknown_keys()
    if sli is None:
        return
    slo_label = {"slo": name}
    ratio, helpers = sli
    recorded: dict[str, str] = {}
    for suffix, expr in helpers.items():  # records the ratios read (`up`: the gauge's sum and count), in order
        helper = f"slo:{snake(name)}_{suffix}"
        for earlier, earlier_name in recorded.items():  # a helper may read the helpers before it
            expr = expr.replace(f"${earlier}", earlier_name)
        recorded[suffix] = helper
        out.records.append(linted_record(Recording(name=helper, expr=expr, labels=tuple(slo_label.items()),
                                                   file=r.file, line=r.start_line), lint_ctx, r.errors))
        ratio = ratio.replace(f"${suffix}", helper)
    for window in WINDOWS:  # the windows differ only in the range: report the 5m record's findings once
        record = Recording(name=record_name(name, window), expr=ratio.replace("$window", window),
                           labels=tuple(slo_label.items()), file=r.file, line=r.start_line)
        out.records.append(linted_record(record, lint_ctx, r.errors if window == WINDOWS[0] else ErrorLog()))
    out.records.append(linted_record(since_record(name, tuple(slo_label.items()), r.file, r.start_line),
                                     lint_ctx, r.errors))
    if None in (budget, what, action, labels):  # the records were checked: their findings are listed too
        return
    all_labels = {**default_labels, **labels, **slo_label}
    for suffix, severity, pairs, meaning in TIERS:
        alert = _alert(name, suffix, severity, pairs, meaning, budget, what.strip(), action.strip(), all_labels,
                       runbook_base, r)
        lint_alert(lint_ctx, AlertLint(name=alert.name, expr=alert.expr, pieces=(), for_=None,
                                       static_labels=frozenset({"severity", *all_labels}),
                                       templates=(alert.summary, alert.description), runbook_url=alert.runbook_url,
                                       ignored=()), r.file, r.start_line, r.errors)
        out.alerts.append(alert)
    out.inhibitions.append((r.start_line, Inhibition(source=fast, target=slow, equal=("slo",))))


def _budget(r: Reader) -> Decimal | None:
    """The error budget as a fraction: 1 - objective/100 (objective in percent, 0 < objective < 100)."""
    text = r.number("objective", required=True)
    try:
        objective = Decimal(text) if text is not None else None
    except InvalidOperation:
        objective = None
    if objective is None:
        return None
    if not 0 < objective < 100:
        r.error("objective", f"{r.what}: 'objective' is a percentage of good events above 0 and below 100, "
                f"like 99.9; got {text}")
        return None
    return (100 - objective) / 100


def _sli(r: Reader) -> tuple[str, dict[str, str]] | None:
    """The error ratio over `$window` as PromQL (the window is filled in per recording rule), and the
    records it reads as {`level:metric` suffix of the name (its `$placeholder` in the ratio): expr}."""
    s = _sub_reader(r, "sli", "errors and total, latency or up", ": ")
    if s is None:
        return None
    item = s.node
    kinds = [k for k in _SLI_KINDS if s.has(k)]
    if len(kinds) != 1:
        s.error(None, f"{s.what}: needs exactly one of 'errors' (with 'total'), 'latency' or 'up'")
        s.seen.update(item.value)
        return None
    expr = {"errors": _errors_ratio, "latency": _latency_ratio, "up": _down_ratio}[kinds[0]](s)
    s.unknown_keys()
    return expr


def _sub_reader(r: Reader, key: str, holding: str, joint: str) -> Reader | None:
    """A reader of the mapping at `key` (required)."""
    item = r.raw(key, required=True)
    if item is None:
        return None
    if not item.is_map():
        r.errors.add(r.file, item.line, f"{r.what}: {key!r} must be a mapping with {holding}")
        return None
    return Reader(item, r.file, r.errors, f"{r.what}{joint}{key}", line=r.line(key))


def _series(s: Reader, key: str, extra: dict[str, str] | None = None, suffix: str = "") -> str | None:
    """`metric{selector}` of `key: {metric, selector}`."""
    r = _sub_reader(s, key, "'metric' (and 'selector')", ".")
    if r is None:
        return None
    metric, labels = r.metric("metric"), r.string_map("selector")
    le = r.text("le", required=True) if extra is not None else None
    r.unknown_keys()
    if metric is None or labels is None or (extra is not None and le is None):
        return None
    if extra is not None:
        return {"count": selector(f"{metric}_count", labels),
                "bucket": selector(f"{metric}_bucket", {**labels, "le": le})}  # type: ignore[return-value]
    return selector(metric + suffix, labels)


def _errors_ratio(s: Reader) -> tuple[str, dict[str, str]] | None:
    """Failed events over all events; no failure counted yet reads as 0, no event at all as no value."""
    errors, total = _series(s, "errors"), _series(s, "total")
    if errors is None or total is None:
        return None
    return f"(sum(rate({errors}[$window])) or vector(0)) / (sum(rate({total}[$window])) > 0)", {}


def _latency_ratio(s: Reader) -> tuple[str, dict[str, str]] | None:
    """Events slower than the bucket bound `le` over all events of a histogram (`metric`: its base name)."""
    parts = _series(s, "latency", extra={})
    if parts is None:
        return None
    count, bucket = parts["count"], parts["bucket"]  # type: ignore[index]
    return (f"(sum(rate({count}[$window])) - sum(rate({bucket}[$window]))) / "
            f"(sum(rate({count}[$window])) > 0)"), {}


def _down_ratio(s: Reader) -> tuple[str, dict[str, str]] | None:
    """The share of samples of a 0/1 gauge (`vigil_gpu_up`) that were not 1 within the window, from two
    fleet-wide records of the gauge's sum (the samples at 1) and count (one series each, recorded once per
    evaluation) rather than from every GPU's samples: a 3d window over a 10,000-GPU fleet would read 170
    million samples at each evaluation. Both come from one read of the gauge, `count_values` (a series
    per value seen, two for a 0/1 gauge), instead of a `sum()` and a `count()` that each read every GPU's
    series; no sample at 1 is a sum of 0, as `sum()` gave, not no sum. The count is kept per node, so on a
    sharded fleet each Prometheus shard reads its own GPUs (`vigil.rules.shard_split` keeps a rule that
    keeps `node` on the shards) and the global tier sums a series or two per node instead of reading
    every GPU of the fleet (vmalert's vigil-slo group grew with the fleet's GPUs: 454 ms at 6,000)."""
    series = _series(s, "up")
    if series is None:
        return None
    return ("1 - sum_over_time($up:sum[$window]) / (sum_over_time($up:count[$window]) > 0)",
            {"up:by_value": f'count_values by (node) ("value", {series})',
             "up:sum": 'sum($up:by_value{value="1"}) or (0 * sum($up:by_value))',
             "up:count": "sum($up:by_value)"})


def _alert(name: str, suffix: str, severity: str, pairs, meaning: str, budget: Decimal, what: str, action: str,
           labels: dict[str, str], runbook_base: str, r: Reader) -> Alert:
    alert_name = f"{name}{suffix}"
    allowed = f"{budget * 100:f}".rstrip("0").rstrip(".")
    conditions = " or ".join(
        f"({record_name(name, long)} > ({rate} * {budget}) and {record_name(name, short)} > ({rate} * {budget})"
        f" and on (slo) (time() - {since_name(name)} >= {format_number(parse_prometheus_duration(short))}))"
        for rate, long, short in pairs)
    windows = " / ".join(f"{rate}x over {long} and {short}" for rate, long, short in pairs)
    description = (f"The error ratio of {what} is {{{{ $value | humanizePercentage }}}} over the last "
                   f"{pairs[0][1]} (or {pairs[1][1]}); the SLO allows {allowed}% over 30 days, and the error budget burns "
                   f"faster than {windows}. This is a {meaning}. {action}")
    return Alert(name=alert_name, expr=conditions, severity=severity,
                 summary=f"SLO {name} ({what}): the error budget burns {'fast' if severity == 'critical' else 'steadily'}",
                 description=description, runbook_url=f"{runbook_base}#{alert_name.lower()}",
                 labels=tuple(sorted({**labels}.items())), notify=meaning.partition(":")[0], kind="slo",
                 file=r.file, line=r.start_line)
