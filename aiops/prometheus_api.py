"""The one place that talks HTTP to Prometheus's query API and turns its failures into one error.

Both readers build on it: `aiops.history.prometheus` (chunked range queries for training) and
`aiops.risk.promapi` (instant and range queries for risk export and alert mining).
"""

from __future__ import annotations

import requests


class PrometheusUnavailable(RuntimeError):
    """Prometheus could not be reached, or answered with an error (the message says which)."""


def api_get(url: str, path: str, params: dict, timeout: float, session: requests.Session | None = None) -> dict:
    """GET `path` of the Prometheus at `url`; return the response's `data`."""
    base = url.rstrip("/")
    try:
        response = (session or requests).get(base + path, params=params, timeout=timeout)
    except requests.RequestException as exc:
        raise PrometheusUnavailable(f"cannot reach Prometheus at {base}: {exc.__class__.__name__}: {exc}") from exc
    try:
        body = response.json()
    except ValueError:
        raise PrometheusUnavailable(
            f"Prometheus at {base} answered HTTP {response.status_code} with a non-JSON body (is this a Prometheus server?)"
        ) from None
    if response.status_code != 200 or body.get("status") != "success":
        reason = body.get("error") or f"HTTP {response.status_code}"
        raise PrometheusUnavailable(f"Prometheus at {base} refused {params.get('query')!r}: {body.get('errorType', 'error')}: {reason}")
    return body["data"]
