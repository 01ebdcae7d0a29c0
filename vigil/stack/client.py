"""One client for the HTTP APIs of a running stack, found through its run directory.

`vigil drill`, `vigil chaos` and `vigil inbox` all talk to the same three services: Prometheus's
query API (through the shared `vigil.common.prometheus_api` client), the notifier (bearer token) and
the simulated fleet's chaos API.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import requests

from vigil.common.prometheus_api import PrometheusClient, Sample

from vigil.stack.runstate import read_state, read_token

# The drill only looks for rows newer than the ones it saw at start; the newest few are enough.
RECENT_ROWS = 100


class StackRequestError(Exception):
    """A stack service refused a request; the message carries its reason."""


@dataclass
class StackClient:
    prometheus: str
    notifier: str
    gpu_control: str | None
    token: str

    @classmethod
    def from_run_dir(cls, run_dir: Path) -> "StackClient":
        """The client of the stack in `run_dir` (raises runstate.NoStack when none runs there)."""
        state = read_state(run_dir)
        return cls(prometheus=state.components["prometheus"].url, notifier=state.components["notifier"].url,
                   gpu_control=state.urls.get("gpu_control"), token=read_token(run_dir))

    def _notifier_get(self, path: str, key: str, limit: int) -> list[dict]:
        r = requests.get(f"{self.notifier}{path}", params={"limit": limit},
                         headers={"Authorization": f"Bearer {self.token}"}, timeout=5)
        r.raise_for_status()
        return r.json()[key]

    def _notifier(self, method: str, path: str, params: dict | None = None, body: dict | None = None) -> dict:
        """Call the notifier's API; a refusal (4xx) raises StackRequestError with the notifier's reason."""
        r = requests.request(method, f"{self.notifier}{path}", params=params, json=body,
                             headers={"Authorization": f"Bearer {self.token}"}, timeout=5)
        if 400 <= r.status_code < 500:
            raise StackRequestError(_reason(r))
        r.raise_for_status()
        return r.json()

    def query(self, promql: str) -> list[Sample]:
        """Instant query; raises `PrometheusUnavailable` saying why Prometheus did not answer."""
        return PrometheusClient(self.prometheus, timeout=5).query(promql)

    def notifications(self, limit: int = RECENT_ROWS) -> list[dict]:
        return self._notifier_get("/api/v1/notifications", "notifications", limit)

    def pages(self, limit: int = 500, **filters) -> list[dict]:
        """Pages delivered to the local inbox, oldest first (the newest `limit`), filtered by the inbox
        route's `to`, `incident` (lists), `status` and `since` (RFC 3339) where given."""
        params = {"limit": limit, **{key: value for key, value in filters.items() if value}}
        return self._notifier("GET", "/api/v1/inbox", params=params)["pages"]

    def incidents(self, limit: int = 500, **filters: str | None) -> list[dict]:
        """Incidents, oldest first (the newest `limit`), filtered by state, priority, team."""
        params = {"limit": limit, **{key: value for key, value in filters.items() if value is not None}}
        return self._notifier("GET", "/api/v1/incidents", params=params)["incidents"]

    def incident(self, incident_id: int) -> dict:
        """One incident with its alerts, timeline and pages."""
        return self._notifier("GET", f"/api/v1/incidents/{incident_id}")

    def incident_action(self, incident_id: int, action: str, by: str, **more: str) -> dict:
        """`ack`, `resolve`, `escalate`, `reopen` or `notes` (with `text`) on incident `incident_id` as `by`."""
        return self._notifier("POST", f"/api/v1/incidents/{incident_id}/{action}", body={"by": by, **more})

    def heartbeats(self) -> list[dict]:
        """The heartbeats the notifier watches (the Watchdog's), with when each was last heard."""
        return self._notifier("GET", "/api/v1/heartbeats")["heartbeats"]

    def maintenance(self, include_past: bool = False) -> list[dict]:
        return self._notifier("GET", "/api/v1/maintenance", params={"all": str(include_past).lower()})["windows"]

    def add_maintenance(self, window: dict) -> dict:
        return self._notifier("POST", "/api/v1/maintenance", body=window)

    def end_maintenance(self, window_id: int) -> dict:
        return self._notifier("POST", f"/api/v1/maintenance/{window_id}/end")

    def oncall_report(self, start: str | None, end: str | None, team: str | None = None) -> dict:
        """The on-call health report of the incidents opened in [start, end) (`docs/oncall-health.md`)."""
        params = {key: value for key, value in (("from", start), ("to", end), ("team", team)) if value is not None}
        return self._notifier("GET", "/api/v1/reports/oncall", params=params)

    def chaos(self, method: str, path: str, body: dict | None = None) -> dict:
        """Call the simulated fleet's chaos API (`GET /chaos`, `POST /chaos/inject`, `POST /chaos/clear`)."""
        if self.gpu_control is None:
            raise StackRequestError("this stack exports real GPUs (NVML); faults can be injected only into the simulated fleet")
        r = requests.request(method, f"{self.gpu_control}{path}", json=body, timeout=5)
        if r.status_code >= 400:
            raise StackRequestError(_reason(r))
        return r.json()


def _reason(response: requests.Response) -> str:
    """The `error` a stack service gave for refusing a request (one line); failing that, a string
    `detail`, else the status and the first line of the body, so the CLI never prints raw JSON."""
    try:
        body = response.json()
    except ValueError:
        body = None
    if isinstance(body, dict):
        for key in ("error", "detail"):
            if isinstance(body.get(key), str) and body[key].strip():
                return " ".join(body[key].split())
    first = (response.text.strip().splitlines() or [""])[0][:200]
    return f"HTTP {response.status_code} {response.reason or ''}".rstrip() + (f": {first}" if first and body is None else "")
