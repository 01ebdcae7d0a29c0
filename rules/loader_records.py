"""The `records:` section of a spec file → validated `Recording`s, linted like alerts.

A recording rule is `name: {expr, labels, lint_ignore}` (or `name: "expr"`), or a compact `kind` with
its keys in place of `expr`, as an alert's. Its name is the series it
records, which must follow Prometheus' `level:metric:operations` convention (lint `recording-name`);
once linted, the name joins the metric catalog with the labels its expression keeps, so alerts and
other records may read it (see `LintContext.recorded`).
"""

from __future__ import annotations

import re
from dataclasses import replace

from .lint_alert import ALL_LINT_IDS, AlertLint, LintContext, lint_record
from .located import ErrorLog, Located
from .model import Group, Recording
from .promql import METRIC_NAME
from .kinds import promql_pieces, read_expression
from .reader import Reader

_LINT_ID = re.compile(r"^[a-z-]+$")
_RESERVED_RECORD_LABELS = ("__name__",)


def lint_ignores(r: Reader, what: str) -> list[str]:
    """The `lint_ignore` list of an alert or record; unknown check ids are errors."""
    ignored = r.name_list("lint_ignore", pattern=_LINT_ID, what="lint check id") or []
    for check in ignored:
        if check not in ALL_LINT_IDS:
            r.error("lint_ignore", f"{what}: unknown lint check {check!r} (known: {', '.join(ALL_LINT_IDS)})")
    return ignored


def record_names(node: Located | None) -> list[str]:
    """The series names a `records` section declares, unvalidated (read before any expression is linted)."""
    if node is None or not node.is_map():
        return []
    return [name for name in node.value if isinstance(name, str) and METRIC_NAME.match(name)]


def load_records(node: Located, file: str, errors: ErrorLog, lint_ctx: LintContext) -> list[Recording]:
    """Every valid record of a `records` mapping, linted in order (a record may read those above it)."""
    if not node.is_map() or not node.value:
        errors.add(file, node.line, "'records' must be a mapping of series name: {expr, labels}")
        return []
    records = []
    for name, item in node.value.items():
        record = _load_record(str(name), item, node.key_lines[name], file, errors, lint_ctx)
        if record is not None:
            records.append(record)
    return records


def _load_record(name: str, item: Located, line: int, file: str, errors: ErrorLog,
                 lint_ctx: LintContext) -> Recording | None:
    what = f"record {name}"
    if not METRIC_NAME.match(name):
        errors.add(file, line, f"{what}: {name!r} is not a valid metric name")
        return None
    if isinstance(item.value, str):  # the short form `name: expr`
        expr, labels, ignored, pieces = item.value, {}, [], ((item.line, item.value),)
    elif item.is_map():
        r = Reader(item, file, errors, what, line=line)
        _, expr = read_expression(r)  # no expression without a valid kind
        labels, ignored, pieces = r.string_map("labels"), lint_ignores(r, what), promql_pieces(r)
        for reserved in _RESERVED_RECORD_LABELS:
            if labels and reserved in labels:
                r.error("labels", f"{what}: label {reserved!r} is the record's name, not a label")
                labels = None
        r.unknown_keys()
    else:
        errors.add(file, line, f"{what}: must be a PromQL expression or a mapping with 'expr' or a 'kind'"
                               " (and 'labels')")
        return None
    if expr is None or not expr.strip():
        if expr is not None:
            errors.add(file, line, f"{what}: 'expr' must be a non-empty PromQL expression")
        return None
    record = linted_record(Recording(name=name, expr=expr.strip(), labels=tuple(sorted((labels or {}).items())),
                                     file=file, line=line), lint_ctx, errors, pieces=pieces, ignored=ignored)
    return None if labels is None else record


def linted_record(record: Recording, lint_ctx: LintContext, errors: ErrorLog, *,
                  pieces: tuple[tuple[int, str], ...] = (), ignored: list[str] | tuple[str, ...] = ()) -> Recording:
    """`record` after linting it, which enters its series into the catalog; `pieces`: (line, PromQL as
    written) where syntax errors are reported (default: the whole expression at the record's line)."""
    lint_record(lint_ctx, AlertLint(name=record.name, expr=record.expr, pieces=pieces or ((record.line, record.expr),),
                                    for_=None, static_labels=frozenset(dict(record.labels)), templates=(),
                                    runbook_url="", ignored=tuple(ignored)), record.file, record.line, errors)
    keeps = lint_ctx.recorded.get(record.name)
    return replace(record, keeps=None if keeps is None else tuple(sorted(keeps)))


def report_duplicates(items, what: str, errors: ErrorLog) -> None:
    """An error at each later definition of a name (alerts, records: `.name`, `.file`, `.line`)."""
    seen: dict = {}
    for item in items:
        first = seen.setdefault(item.name, item)
        if first is not item:
            errors.add(item.file, item.line,
                       f"duplicate {what} name {item.name!r} (first defined at {first.file}:{first.line})")


def check_unique_records(groups: list[Group], errors: ErrorLog) -> None:
    """A series recorded by two rules would clash at every evaluation: each name is recorded once."""
    report_duplicates((r for g in groups for r in g.records), "record", errors)
