"""Lint checks for the known alerting pitfalls (awesome-prometheus-alerts contributor guide, pint).

They look at the expanded PromQL text, so they apply equally to raw `expr` alerts and compact kinds.
This is a pragmatic text scan, not a PromQL parser: an alert can silence a finding it has checked by
listing the check's id in `lint_ignore`.
"""

from __future__ import annotations

import re

from vigil.common.durations import parse_prometheus_duration

RATE_OF_GAUGE = "rate-of-gauge"
ABSENT_WITHOUT_FOR = "absent-without-for"
UNGUARDED_DIVISION = "unguarded-division"
RECORDING_NAME = "recording-name"
LINT_IDS = (RATE_OF_GAUGE, ABSENT_WITHOUT_FOR, UNGUARDED_DIVISION, RECORDING_NAME)

# Prometheus' naming convention for recorded series: level:metric:operations (at least three parts),
# e.g. `instance:node_cpu:rate5m` or `slo:notifier_page_delivery_errors:ratio_rate5m`.
_RECORDING_NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*(:[a-zA-Z_][a-zA-Z0-9_]*){2,}$")

_COUNTER_SUFFIXES = ("_total", "_count", "_sum", "_bucket")
_RATE_CALL = re.compile(r"\b(rate|irate|increase|resets)\s*\(\s*([a-zA-Z_:][a-zA-Z0-9_:]*)\s*([({\[]?)")
_ABSENT_CALL = re.compile(r"\babsent(_over_time)?\s*\(")
_MATCHING = re.compile(r"^\s*(?:(?:on|ignoring)\s*\([^)]*\)\s*)?(?:(?:group_left|group_right)\s*(?:\([^)]*\))?\s*)?")
_GUARD_AT_END = re.compile(r"(>\s*[0-9.]+|>=\s*0*[1-9][0-9.]*|!=\s*0)\s*$")
_NUMBER = re.compile(r"^[0-9.]+(e[+-]?[0-9]+)?")


def _strip_strings_and_comments(expr: str) -> str:
    """The expression with string literals blanked and comments removed (so `/` in a regex is ignored)."""
    expr = re.sub(r'"(?:\\.|[^"\\])*"', '""', expr)
    expr = re.sub(r"'(?:\\.|[^'\\])*'", "''", expr)
    expr = re.sub(r"`[^`]*`", "``", expr)
    return re.sub(r"#[^\n]*", "", expr)


def _balanced(text: str, start: int) -> str:
    """The text inside the parenthesis that opens at `start`."""
    depth = 0
    for i in range(start, len(text)):
        if text[i] == "(":
            depth += 1
        elif text[i] == ")":
            depth -= 1
            if depth == 0:
                return text[start + 1:i]
    return text[start + 1:]


def _denominator_guarded(rest: str) -> bool:
    rest = rest[_MATCHING.match(rest).end():]
    number = _NUMBER.match(rest)
    if number:
        return float(number.group(0).rstrip(".") or 0) != 0
    if rest.startswith("clamp_min("):
        return True
    if rest.startswith("("):
        inner = _balanced(rest, 0).strip()
        return bool(_GUARD_AT_END.search(inner)) or inner.startswith("clamp_min(")
    return False


def _unguarded_division(expr: str) -> bool:
    text = _strip_strings_and_comments(expr)
    text = re.sub(r"\[[^\]]*\]", "[]", text)  # durations and subqueries never hold a division sign
    return any(not _denominator_guarded(text[m.end():]) for m in re.finditer(r"/", text))


def lint(expr: str, for_: str | None) -> list[tuple[str, str]]:
    """(check id, message) for every pitfall found in an alert's expression and its `for`."""
    findings = []
    code = _strip_strings_and_comments(expr)
    for match in _RATE_CALL.finditer(code):
        func, metric, after = match.groups()
        if after == "(":  # a nested function call, not a metric name
            continue
        if not metric.endswith(_COUNTER_SUFFIXES):
            findings.append((RATE_OF_GAUGE, f"{func}() of {metric!r}, which looks like a gauge (counters end in "
                             "_total); use delta()/deriv() for gauges"))
    no_for = for_ is None or parse_prometheus_duration(for_) == 0
    if _ABSENT_CALL.search(code) and no_for:
        findings.append((ABSENT_WITHOUT_FOR, "absent() without 'for' fires on every restart or scrape gap; "
                         "add a 'for' (e.g. 5m)"))
    if _unguarded_division(expr):
        findings.append((UNGUARDED_DIVISION, "division whose denominator is not guarded against zero; write "
                         "'/ (denominator > 0)' or use kind: ratio"))
    return findings


def recording_name(name: str) -> list[tuple[str, str]]:
    """A finding when a recorded series' name does not follow `level:metric:operations`."""
    if _RECORDING_NAME.match(name):
        return []
    return [(RECORDING_NAME, f"recording rule name {name!r} does not follow level:metric:operations (the labels "
             "it keeps, the metric it reads, the operations applied), e.g. 'job:http_requests:rate5m'")]
