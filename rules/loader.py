"""Spec files → validated `RuleSet`, collecting every error as `file:line: message`.

A spec file (see docs/rules.md) holds an optional `group`, `interval` and `defaults`, and at least one
of `records` (recording rules, `loader_records`), `slos` (`slo`) and `alerts` (alert name → alert). Nothing is raised until every file has been read, so one run of
`vigil rules check` shows all mistakes at once.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

from vigil.common.durations import parse_prometheus_duration

from .kinds import promql_pieces, read_expression
from .causes import read_links
from .lint_alert import DEFAULT_SCRAPE_INTERVAL, AlertLint, LintContext, lint_alert, lint_inhibition
from .loader_records import check_unique_records, lint_ignores, load_records, record_names, report_duplicates
from .located import ErrorLog, Located, SpecError, load_located
from .model import ALL_OTHER_ALERTS, NOTIFY, SEVERITIES, Alert, Group, Inhibition, Recording, RuleSet
from .slo import load_slos, slo_record_names
from .promql import ALERT_NAME, METRIC_NAME
from .reader import Reader

DEFAULT_RUNBOOK_BASE = "docs/runbooks.md"
_RESERVED_LABELS = ("alertname", "severity", "notify")


@dataclass
class _Defaults:
    labels: dict[str, str] = field(default_factory=dict)
    runbook_base: str = DEFAULT_RUNBOOK_BASE
    for_: str | None = None
    keep_firing_for: str | None = None
    notify: str | None = None


@dataclass
class _Pending:
    """An inhibition as written, resolved once every file (and so every alert name) is known."""

    file: str
    line: int
    inhibition: Inhibition


@dataclass
class _File:
    """One spec file once its top-level keys are read; its sections are loaded in later passes."""

    path: Path
    group: str
    interval: str | None
    defaults: _Defaults
    lint: tuple[float, dict, frozenset[str]]  # scrape interval (s), external metrics, target labels
    records: Located | None
    slos: Located | None
    alerts: Located | None

    def use_lint_settings(self, ctx: LintContext) -> None:
        ctx.scrape_interval_s, ctx.external, ctx.target_labels = self.lint


def simulator_faults() -> tuple[str, ...]:
    """The simulated fleet's fault names, which a `drill` names. Imported here, when a spec has a drill,
    not when the rules package is: loading rules needs no simulator."""
    from vigil.exporters.sim.faults import FAULTS

    return tuple(FAULTS)


def load_specs(paths: list[Path]) -> RuleSet:
    """Load and validate spec files; raise `SpecError` listing every problem found.

    Three passes, so that any alert may read a series recorded in any file: every recorded name is
    known first (labels not yet), then the records (and SLOs) of every file are linted, each entering
    the catalog with the labels it keeps, then the alerts."""
    errors = ErrorLog()
    lint_ctx = LintContext()
    pending: list[_Pending] = []
    if not paths:
        raise SpecError(["<none>:0: no spec files given"])
    files = [spec for spec in (_read_file(Path(path), errors) for path in paths) if spec is not None]
    for spec in files:
        lint_ctx.recorded.update(dict.fromkeys(record_names(spec.records) + slo_record_names(spec.slos)))
    records: dict[str, list[Recording]] = {}
    slo_alerts: dict[str, list[Alert]] = {}
    slo_inhibitions: dict[str, list[_Pending]] = {}
    for spec in files:
        spec.use_lint_settings(lint_ctx)
        file = str(spec.path)
        records[file] = load_records(spec.records, file, errors, lint_ctx) if spec.records is not None else []
        if spec.slos is not None:
            expanded = load_slos(spec.slos, file, errors, lint_ctx, spec.defaults.labels, spec.defaults.runbook_base)
            records[file] += expanded.records
            slo_alerts[file] = expanded.alerts
            slo_inhibitions[file] = [_Pending(file, line, inhibition) for line, inhibition in expanded.inhibitions]
    groups: list[Group] = []
    for spec in files:
        spec.use_lint_settings(lint_ctx)
        file = str(spec.path)
        pending.extend(slo_inhibitions.get(file, []))
        alerts = slo_alerts.get(file, []) + _load_alerts(spec, errors, pending, lint_ctx)
        groups.append(Group(name=spec.group, alerts=tuple(alerts), interval=spec.interval, file=file,
                            records=tuple(records[file])))
    _check_unique(groups, errors)
    check_unique_records(groups, errors)
    inhibitions = _resolve_inhibitions(groups, pending, errors, lint_ctx)
    if errors:
        raise SpecError(errors.messages)
    return RuleSet(groups=tuple(_with_alert_labels(group, lint_ctx) for group in groups), inhibitions=inhibitions)


def _with_alert_labels(group: Group, lint_ctx: LintContext) -> Group:
    """`group` with each alert's `carries`: the labels the lint found on its result (inhibitions need them)."""
    def carrying(alert: Alert) -> Alert:
        labels = lint_ctx.alert_labels.get(alert.name)
        return replace(alert, carries=None if labels is None else tuple(sorted(labels | {"alertname"})))
    return replace(group, alerts=tuple(carrying(alert) for alert in group.alerts))


def _read_file(path: Path, errors: ErrorLog) -> _File | None:
    root = load_located(path, errors)
    if root is None:
        return None
    file = str(path)
    if not root.is_map():
        errors.add(file, root.line, "a spec file must be a mapping with an 'alerts' key (or 'records', 'slos')")
        return None
    top = Reader(root, file, errors, "spec")
    name = top.text("group") or path.stem
    interval = top.duration("interval")
    defaults = _load_defaults(top, file, errors)
    lint = (parse_prometheus_duration(top.duration("scrape_interval") or DEFAULT_SCRAPE_INTERVAL),
            _external_metrics(top), frozenset(top.name_list("target_labels") or ()))
    sections = [top.raw(key) for key in ("records", "slos", "alerts")]
    if sections == [None, None, None]:
        top.error(None, "spec: missing required key 'alerts' (or 'records', 'slos')")
    top.unknown_keys()
    return _File(path, name, interval, defaults, lint, *sections)


def _load_alerts(spec: _File, errors: ErrorLog, pending: list[_Pending], lint_ctx: LintContext) -> list[Alert]:
    file, alerts_node = str(spec.path), spec.alerts
    if alerts_node is None:
        return []
    if not alerts_node.is_map() or not alerts_node.value:
        errors.add(file, alerts_node.line, "'alerts' must be a mapping of alert name: alert")
        return []
    alerts = []
    for alert_name, node in alerts_node.value.items():
        alert = _load_alert(alert_name, node, alerts_node.key_lines[alert_name], file, spec.defaults, errors,
                            pending, lint_ctx)
        if alert is not None:
            alerts.append(alert)
    return alerts


def _external_metrics(top: Reader) -> dict[str, frozenset[str] | None]:
    """`external_metrics`: metrics no catalogued exporter provides, as {name: [labels]} or a list of names
    (labels not known, so not checked)."""
    item = top.raw("external_metrics")
    if item is None:
        return {}
    names = top.name_list("external_metrics", pattern=METRIC_NAME, what="metric name", item=item) \
        if not item.is_map() else None
    if names is not None:
        return {name: None for name in names}
    if not item.is_map():
        return {}
    declared: dict[str, frozenset[str] | None] = {}
    for name, labels in item.value.items():
        if not METRIC_NAME.match(name):
            top.errors.add(top.file, item.key_lines[name], f"spec: external metric {name!r} is not a valid metric name")
            continue
        listed = None if labels.value is None else top.name_list("external_metrics", item=labels)
        declared[name] = None if listed is None else frozenset(listed) | {"job", "instance"}
    return declared


def _load_defaults(top: Reader, file: str, errors: ErrorLog) -> _Defaults:
    node = top.raw("defaults")
    if node is None:
        return _Defaults()
    if not node.is_map():
        errors.add(file, node.line, "'defaults' must be a mapping")
        return _Defaults()
    r = Reader(node, file, errors, "defaults")
    labels = _extra_labels(r) or {}
    result = _Defaults(labels=labels, runbook_base=r.text("runbook_base") or DEFAULT_RUNBOOK_BASE,
                       for_=r.duration("for"), keep_firing_for=r.duration("keep_firing_for"),
                       notify=r.choice("notify", NOTIFY) if r.has("notify") else None)
    r.unknown_keys()
    return result


def _extra_labels(r: Reader) -> dict[str, str] | None:
    """The `labels` mapping; `alertname`, `severity` and `notify` are reserved for the generator."""
    labels = r.string_map("labels")
    for reserved in _RESERVED_LABELS:
        if labels and reserved in labels:
            r.error("labels", f"{r.what}: label {reserved!r} is set by the generator, not in 'labels'")
    return labels


def _load_alert(name: str, node: Located, line: int, file: str, defaults: _Defaults, errors: ErrorLog,
                pending: list[_Pending], lint_ctx: LintContext) -> Alert | None:
    if not ALERT_NAME.match(name):
        errors.add(file, line, f"alert name {name!r} must start with a letter and hold only letters, digits, _")
    if not node.is_map():
        errors.add(file, line, f"alert {name}: must be a mapping (kind, severity, summary, ...)")
        return None
    r = Reader(node, file, errors, f"alert {name}", line=line)
    kind, expr = read_expression(r)
    severity = r.choice("severity", SEVERITIES, required=True)
    notify = r.choice("notify", NOTIFY) if r.has("notify") else defaults.notify
    summary, description = r.text("summary", required=True), r.text("description", required=True)
    for key, text in (("summary", summary), ("description", description)):
        if text is not None and text.count("{{") != text.count("}}"):
            r.error(key, f"alert {name}: unbalanced {{{{ }}}} in the {key} template")
    for_ = r.duration("for") if r.has("for") else defaults.for_
    keep = r.duration("keep_firing_for") if r.has("keep_firing_for") else defaults.keep_firing_for
    labels = _extra_labels(r)
    runbook = r.text("runbook") or name.lower()
    if "/" not in runbook:  # an anchor in the default runbook page
        runbook = f"{defaults.runbook_base}#{runbook}"
    pending.extend(_Pending(r.file, line, link) for line, link in read_links(r, [name]))
    drill = r.choice("drill", simulator_faults()) if r.has("drill") else None
    ignored = lint_ignores(r, f"alert {name}")
    r.unknown_keys()
    if expr is not None:
        static = frozenset({"severity", *defaults.labels, *(labels or {})})
        lint_alert(lint_ctx, AlertLint(name=name, expr=expr, pieces=promql_pieces(r),
                                       for_=for_, static_labels=static,
                                       templates=tuple(t for t in (summary, description) if t), runbook_url=runbook,
                                       ignored=tuple(ignored)), file, line, errors)
    if None in (expr, severity, summary, description, labels):
        return None
    return Alert(name=name, expr=expr.strip(), severity=severity, summary=summary.strip(),
                 description=description.strip(), runbook_url=runbook, for_=for_, keep_firing_for=keep,
                 labels=tuple(sorted({**defaults.labels, **labels}.items())), notify=notify, kind=kind, drill=drill, file=file,
                 line=line)


def _check_unique(groups: list[Group], errors: ErrorLog) -> None:
    report_duplicates((a for g in groups for a in g.alerts), "alert", errors)
    drilled: dict[str, Alert] = {}
    for alert in (a for g in groups for a in g.alerts):
        if alert.drill is not None:
            other = drilled.setdefault(alert.drill, alert)
            if other is not alert:
                errors.add(alert.file, alert.line, f"alert {alert.name}: fault {alert.drill!r} already drills "
                           f"alert {other.name} ({other.file}:{other.line}); a drill expects one alert")
    group_files: dict[str, str] = {}
    for group in groups:
        first_file = group_files.setdefault(group.name, group.file)
        if first_file != group.file:
            errors.add(group.file, 1, f"duplicate group name {group.name!r} (also used by {first_file})")


def _resolve_inhibitions(groups: list[Group], pending: list[_Pending], errors: ErrorLog,
                         lint_ctx: LintContext) -> tuple[Inhibition, ...]:
    names = {a.name for g in groups for a in g.alerts}
    result: list[Inhibition] = []
    for item in pending:
        inh = item.inhibition
        for role, other in (("source", inh.source), ("target", inh.target)):
            if other == ALL_OTHER_ALERTS and role == "target":
                continue
            if other not in names:
                errors.add(item.file, item.line, f"inhibition refers to unknown alert {other!r}")
        if inh.source == inh.target:
            errors.add(item.file, item.line, f"alert {inh.source} cannot inhibit itself")
        if inh not in result:  # declared on both sides: keep one
            result.append(inh)
            lint_inhibition(lint_ctx, inh, item.file, item.line, errors)
    return tuple(result)
