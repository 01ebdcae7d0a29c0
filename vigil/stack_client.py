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

from .runstate import read_state, read_token

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

    def query(self, promql: str) -> list[Sample]:
        """Instant query; raises `PrometheusUnavailable` saying why Prometheus did not answer."""
        return PrometheusClient(self.prometheus, timeout=5).query(promql)

    def notifications(self, limit: int = RECENT_ROWS) -> list[dict]:
        return self._notifier_get("/api/v1/notifications", "notifications", limit)

    def pages(self, limit: int = 500) -> list[dict]:
        """Pages delivered to the local inbox, oldest first (the newest `limit`)."""
        return self._notifier_get("/api/v1/inbox", "pages", limit)

    def chaos(self, method: str, path: str, body: dict | None = None) -> dict:
        """Call the simulated fleet's chaos API (`GET /chaos`, `POST /chaos/inject`, `POST /chaos/clear`)."""
        if self.gpu_control is None:
            raise StackRequestError("this stack exports real GPUs (NVML); faults can be injected only into the simulated fleet")
        r = requests.request(method, f"{self.gpu_control}{path}", json=body, timeout=5)
        if r.status_code >= 400:
            try:
                reason = r.json().get("error", r.text)
            except ValueError:
                reason = r.text
            raise StackRequestError(reason)
        return r.json()
