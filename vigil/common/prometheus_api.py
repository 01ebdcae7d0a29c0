"""The one client of Prometheus's HTTP API: instant queries, range queries and series, with clear errors.

Plain `requests`, no client library: callers want instant vectors as `(labels, value)`, range matrices
as `(labels, [(t, v), ...])` (or as Prometheus sent them, to make arrays of) and label sets, and one
exception, `PrometheusUnavailable`, whose message says whether Prometheus could not be reached, did not
answer like a Prometheus, or refused the query.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple
from urllib.parse import urlencode

import requests


class PrometheusUnavailable(RuntimeError):
    """Prometheus could not be reached, or answered with an error (the message says which)."""


class Sample(NamedTuple):
    """One series of an instant vector (unpacks as `labels, value`); NaN values are kept."""

    labels: dict[str, str]
    value: float


class RangeSeries(NamedTuple):
    """One series of a range matrix (unpacks as `labels, points`), points as `(unix time, value)`."""

    labels: dict[str, str]
    points: list[tuple[float, float]]


def _short(text: str, limit: int = 300) -> str:
    """`text` cut to `limit` characters for an error message (a batch query can be kilobytes long)."""
    return text if len(text) <= limit else text[:limit] + f"... ({len(text)} characters)"


def format_time(seconds: float) -> str:
    """Unix seconds as Prometheus accepts them, to the millisecond and without float noise."""
    return f"{seconds:.3f}".rstrip("0").rstrip(".")


@dataclass(frozen=True)
class RecordedRule:
    """A loaded recording rule: the series `name` is `expr` with `labels` set."""

    name: str
    expr: str
    labels: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class LoadedRules:
    alerts: dict[str, str]  # each alerting rule's expression, by alert name
    records: list[RecordedRule]


class PrometheusClient:
    """Talks to the Prometheus at `url`; `session` reuses connections across many requests.

    Parameters longer than `max_url_query` characters (URL-encoded) go in a POSTed form instead of the
    URL, which Prometheus and VictoriaMetrics read alike and proxies do not cut (a batch of series
    selectors joined with `or` runs to kilobytes).
    """

    max_url_query = 4096

    def __init__(self, url: str, timeout: float = 10.0, session: requests.Session | None = None):
        self.url = url.rstrip("/")
        self.timeout = timeout
        self.session = session

    def query(self, promql: str, at: float | None = None) -> list[Sample]:
        """Instant query: one `Sample(labels, value)` per series of the vector `promql` returns."""
        params = {"query": promql}
        if at is not None:
            params["time"] = format_time(at)
        data = self._get("/api/v1/query", params, promql)
        if data.get("resultType") != "vector":
            raise PrometheusUnavailable(f"expected an instant vector from {promql!r}, got {data.get('resultType')}")
        return [Sample(dict(series["metric"]), float(series["value"][1])) for series in data["result"]]

    def query_range(self, promql: str, start: float, end: float, step: float) -> list[RangeSeries]:
        """Range query: one `RangeSeries(labels, [(t, v), ...])` per series, between `start` and `end`."""
        return [RangeSeries(dict(series["metric"]), [(float(t), float(v)) for t, v in series["values"]])
                for series in self.query_range_raw(promql, start, end, step)]

    def query_range_raw(self, promql: str, start: float, end: float, step: float) -> list[dict]:
        """Range query, its series as Prometheus sent them (`{"metric": labels, "values": [[t, "v"], ...]}`),
        for callers that turn the points into arrays themselves rather than into a tuple per point."""
        params = {"query": promql, "start": format_time(start), "end": format_time(end), "step": format_time(step)}
        data = self._get("/api/v1/query_range", params, promql)
        if data.get("resultType") != "matrix":
            raise PrometheusUnavailable(f"expected a range matrix from {_short(promql)!r}, got {data.get('resultType')}")
        return data["result"]

    def series(self, *selectors: str, start: float | None = None, end: float | None = None) -> list[dict[str, str]]:
        """The label sets of every series matching any of `selectors` (between `start` and `end` when given)."""
        if not selectors:
            raise ValueError("series() needs at least one selector")
        params: dict = {"match[]": list(selectors)}
        if start is not None:
            params["start"] = format_time(start)
        if end is not None:
            params["end"] = format_time(end)
        return [dict(labels) for labels in self._get("/api/v1/series", params, " or ".join(selectors))]

    def loaded_rules(self) -> "LoadedRules":
        """The alerting and recording rules Prometheus has loaded (one `/api/v1/rules`)."""
        data = self._get("/api/v1/rules", {}, "/api/v1/rules")
        rules = [rule for group in data.get("groups", []) for rule in group.get("rules", [])]
        return LoadedRules(
            alerts={rule["name"]: rule["query"] for rule in rules if rule.get("type") == "alerting"},
            records=[RecordedRule(rule["name"], rule["query"], tuple(sorted((rule.get("labels") or {}).items())))
                     for rule in rules if rule.get("type") == "recording"])

    def config(self) -> str:
        """The configuration Prometheus has loaded, as its YAML text (`/api/v1/status/config`)."""
        data = self._get("/api/v1/status/config", {}, "/api/v1/status/config")
        if not isinstance(data, dict) or not isinstance(data.get("yaml"), str):
            raise PrometheusUnavailable(f"{self.url} did not answer /api/v1/status/config like a Prometheus server")
        return data["yaml"]

    def _get(self, path: str, params: dict, what: str) -> dict | list:
        """GET `path` (POST its form when the parameters are too long for a URL); return the answer's
        `data`, or raise PrometheusUnavailable saying what went wrong."""
        http = self.session or requests
        try:
            if len(urlencode(params, doseq=True)) > self.max_url_query:
                response = http.post(self.url + path, data=params, timeout=self.timeout)
            else:
                response = http.get(self.url + path, params=params, timeout=self.timeout)
        except requests.RequestException as exc:
            raise PrometheusUnavailable(f"cannot reach Prometheus at {self.url}: {exc.__class__.__name__}: {exc}") from exc
        try:
            body = response.json()
        except ValueError:
            raise PrometheusUnavailable(f"Prometheus at {self.url} answered HTTP {response.status_code} with a "
                                        "non-JSON body (is this a Prometheus server?)") from None
        if response.status_code != 200 or not isinstance(body, dict) or body.get("status") != "success":
            body = body if isinstance(body, dict) else {}
            reason = body.get("error") or f"HTTP {response.status_code}"
            raise PrometheusUnavailable(f"Prometheus at {self.url} refused {_short(what)!r}: "
                                        f"{body.get('errorType', 'error')}: {reason}")
        return body["data"]
