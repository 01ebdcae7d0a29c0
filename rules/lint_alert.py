"""The lint of one alert and of the inhibitions between alerts, run by the loader while it reads the
specs so that lint findings are reported at the spec's `file:line` together with every other error.

Checks (ids go in an alert's `lint_ignore`): the text checks of `lint.py`, the query checks of
`lint_query.py`, and `runbook` (no entry in the runbook file). A syntax error in an expression is
always an error and stops the other checks of that expression. Recording rules get the same PromQL
checks (not those about `for`, routing labels, templates or runbooks) plus their naming convention;
each recorded name then joins the catalog with the labels its expression keeps, so alerts may read it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .catalog import MetricCatalog, load_catalog
from .lint import ABSENT_WITHOUT_FOR, LINT_IDS, lint, recording_name
from .lint_query import QUERY_LINT_IDS, SYNTAX, AlertQuery, check_query, inhibition_findings
from .located import ErrorLog
from .model import Inhibition
from .query import LabelSet, QuerySyntaxError, parse
from .runbooks import RunbookIndex

RUNBOOK = "runbook"
ALL_LINT_IDS = (*LINT_IDS, *QUERY_LINT_IDS, RUNBOOK)
DEFAULT_SCRAPE_INTERVAL = "15s"


@dataclass
class LintContext:
    """What the lint knows across files; `external`, `scrape_interval_s` and `target_labels` are set per spec file."""

    catalog: MetricCatalog = field(default_factory=load_catalog)
    runbooks: RunbookIndex = field(default_factory=RunbookIndex)
    external: dict[str, LabelSet] = field(default_factory=dict)
    scrape_interval_s: float = 15.0
    target_labels: frozenset[str] = frozenset()
    alert_labels: dict[str, LabelSet] = field(default_factory=dict)  # filled per alert, read by inhibitions
    recorded: dict[str, LabelSet] = field(default_factory=dict)  # recording rule name -> labels it keeps

    def known_metrics(self) -> dict[str, LabelSet]:
        """The spec's external metrics and every recorded series, on top of the catalog."""
        return {**self.external, **self.recorded}


@dataclass(frozen=True)
class AlertLint:
    """One alert as the lint sees it; `pieces` are the (line, text) of the PromQL its spec writes out
    (`expr`, or a ratio's `numerator` and `denominator`), so a syntax error points at the right line."""

    name: str
    expr: str
    pieces: tuple[tuple[int, str], ...]
    for_: str | None
    static_labels: frozenset[str]
    templates: tuple[str, ...]
    runbook_url: str
    ignored: tuple[str, ...]


def lint_alert(ctx: LintContext, alert: AlertLint, file: str, line: int, errors: ErrorLog) -> None:
    """Record every finding for one alert: syntax at the line of the PromQL written, the others at the alert's."""
    query = AlertQuery(alert.expr, alert.static_labels, alert.templates, ctx.scrape_interval_s, ctx.target_labels)
    findings, labels = check_query(query, ctx.catalog, ctx.known_metrics())
    ctx.alert_labels[alert.name] = labels
    if findings and findings[0][0] == SYNTAX:
        errors.add(file, *_syntax_error(alert, line, findings[0][1]))
    else:
        findings = lint(alert.expr, alert.for_) + findings
    problem = ctx.runbooks.problem(alert.runbook_url)
    if problem is not None:
        findings.append((RUNBOOK, problem))
    for check, message in findings:
        if check != SYNTAX and check not in alert.ignored:
            errors.add(file, line, f"alert {alert.name}: {message} [{check}]")


def lint_record(ctx: LintContext, record: AlertLint, file: str, line: int, errors: ErrorLog) -> None:
    """Record every finding for one recording rule (`record.name` is the recorded series) and enter the
    series into `ctx.recorded` with the labels it keeps (None when not known)."""
    findings = recording_name(record.name)
    if ctx.catalog.get(record.name) is not None:
        errors.add(file, line, f"record {record.name}: an exporter already exports {record.name!r} "
                   f"({ctx.catalog.get(record.name).source}); a recorded series needs a name of its own")
    query = AlertQuery(record.expr, record.static_labels, (), ctx.scrape_interval_s, ctx.target_labels, routed=False)
    query_findings, labels = check_query(query, ctx.catalog, ctx.known_metrics())
    ctx.recorded[record.name] = labels
    if query_findings and query_findings[0][0] == SYNTAX:
        errors.add(file, *_syntax_error(record, line, query_findings[0][1], what="record"))
    else:
        findings += [f for f in lint(record.expr, None) if f[0] != ABSENT_WITHOUT_FOR] + query_findings
    for check, message in findings:
        if check not in record.ignored:
            errors.add(file, line, f"record {record.name}: {message} [{check}]")


def _syntax_error(rule: AlertLint, line: int, message: str, what: str = "alert") -> tuple[int, str]:
    """(line, message) of the first piece of PromQL that does not parse on its own (else the rule's)."""
    for piece_line, text in rule.pieces:
        try:
            parse(text)
        except QuerySyntaxError as exc:
            return piece_line, f"{what} {rule.name}: the expression is not valid PromQL: {exc}"
    return line, f"{what} {rule.name}: {message}"


def lint_inhibition(ctx: LintContext, inhibition: Inhibition, file: str, line: int, errors: ErrorLog) -> None:
    for message in inhibition_findings(inhibition.source, inhibition.target, inhibition.equal, ctx.alert_labels):
        errors.add(file, line, f"{message} [missing-label]")
