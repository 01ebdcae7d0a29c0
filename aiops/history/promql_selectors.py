"""PromQL selectors that name a given set of series, for reading a listed fleet a batch at a time.

Two ways, both checked against the listing of the user's selector:
- `alternation_selector`: the user's own matchers plus one regex alternation over a label whose value is
  different on every listed series (`uuid`, say), so the selector matches exactly the batch. One vector
  selector: Prometheus answers 64 series as fast per series as one.
- `union_selector`: one selector per series (an equality matcher per label) joined with `or`, for
  series no single label tells apart. Prometheus' cost of an `or` chain grows with the square of its
  length (measured: 8 series 0.2 s, 64 series 7.6 s for 14 days at 5 minutes), so such batches stay small.
  A series with more labels than one of the batch also matches its selector: the reader drops it.
"""

from __future__ import annotations

import json
import re

import promql_parser

SeriesKey = tuple[tuple[str, str], ...]  # sorted (label, value) pairs, __name__ included

_METRIC_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
_RE2_SPECIAL = re.compile(r"([\\.+*?()|\[\]{}^$])")
_OPS = {"Equal": "=", "NotEqual": "!=", "Re": "=~", "NotRe": "!~"}


def series_key(labels: dict[str, str]) -> SeriesKey:
    """A series' identity as sorted `(label, value)` pairs, `__name__` included."""
    return tuple(sorted(labels.items()))


def quoted(value: str) -> str:
    """A PromQL string literal of `value` (PromQL reads JSON's escapes)."""
    return json.dumps(value, ensure_ascii=False)


def selector_matchers(text: str) -> list[str] | None:
    """The matchers of a plain series selector (`name`, `name{…}`, `{…}`: what `/api/v1/series` lists)
    as PromQL text, the name first; None for anything else (a function, a range, offset, `@`, a bad query)."""
    try:
        node = promql_parser.parse(text)
    except ValueError:
        return None  # read as a query: Prometheus' own error tells the user what is wrong
    if type(node).__name__ != "VectorSelector" or node.offset is not None or node.at is not None \
            or node.matchers.or_matchers:
        return None
    matchers = [f"__name__={quoted(node.name)}"] if node.name else []
    for matcher in node.matchers.matchers:
        matchers.append(f"{matcher.name}{_OPS[str(matcher.op).rsplit('.', 1)[-1]]}{quoted(matcher.value)}")
    return matchers


def identifying_label(keys: list[SeriesKey]) -> str | None:
    """A label (not `__name__`) that every series in `keys` has, with a different value on each; of
    several, the one with the shortest values. None when there is none."""
    if not keys:
        return None
    rows = [dict(key) for key in keys]
    common = set(rows[0]).intersection(*rows[1:]) - {"__name__"}
    unique = [label for label in common if len({row[label] for row in rows}) == len(rows)]
    return min(unique, key=lambda label: (sum(len(row[label]) for row in rows), label), default=None)


def alternation_selector(base: list[str], label: str, keys: list[SeriesKey]) -> str:
    """`{base…, label=~"v1|v2|…"}` over the values of `label` in `keys`, regex-escaped."""
    values = sorted({dict(key)[label] for key in keys})
    alternation = "|".join(_RE2_SPECIAL.sub(r"\\\1", value) for value in values)
    return "{" + ",".join([*base, f"{label}=~{quoted(alternation)}"]) + "}"


def exact_selector(key: SeriesKey) -> str:
    """A selector with one equality matcher per label of `key`."""
    labels = dict(key)
    name = labels.pop("__name__", "")
    matchers = ",".join(f"{label}={quoted(value)}" for label, value in labels.items())
    if _METRIC_NAME.fullmatch(name):
        return f"{name}{{{matchers}}}"
    return "{" + ",".join(filter(None, [f"__name__={quoted(name)}", matchers])) + "}"


def union_selector(keys: list[SeriesKey]) -> str:
    """The exact selectors of `keys` joined with `or`."""
    return " or ".join(exact_selector(key) for key in keys)
