"""The lint of one alert and of the inhibitions between alerts, run by the loader while it reads the
specs so that lint findings are reported at the spec's `file:line` together with every other error.

Checks (ids go in an alert's `lint_ignore`): the text checks of `lint.py`, the query checks of
`lint_query.py`, and `runbook` (no entry in the runbook file). A syntax error in an expression is
always an error and stops the other checks of that expression.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .catalog import MetricCatalog, load_catalog
from .lint import LINT_IDS, lint
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
    findings, labels = check_query(query, ctx.catalog, ctx.external)
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


def _syntax_error(alert: AlertLint, line: int, message: str) -> tuple[int, str]:
    """(line, message) of the first piece of PromQL that does not parse on its own (else the alert's)."""
    for piece_line, text in alert.pieces:
        try:
            parse(text)
        except QuerySyntaxError as exc:
            return piece_line, f"alert {alert.name}: the expression is not valid PromQL: {exc}"
    return line, f"alert {alert.name}: {message}"


def lint_inhibition(ctx: LintContext, inhibition: Inhibition, file: str, line: int, errors: ErrorLog) -> None:
    for message in inhibition_findings(inhibition.source, inhibition.target, inhibition.equal, ctx.alert_labels):
        errors.add(file, line, f"{message} [missing-label]")
