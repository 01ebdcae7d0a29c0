"""The seeded store of the postmortem tests: incidents opened around the simulated now on a real
notifier app (no Prometheus). A pytest plugin (tests/conftest.py registers it): the `seeded` fixture is
found, not imported."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from vigil.notifier.app import create_app
from vigil.notifier.postmortem.render import when
from vigil.oncall.loader import parse_oncall
from sim_clock import SIM_NOW as T0, FakeClock
from test_notifier_incidents_api import HOOK
from test_notifier_incidents_api import ONCALL as INCIDENTS_ONCALL
from test_notifier_support import AUTH, alert, make_settings, payload

DAY = 86400.0
# the incidents API tests' team (alice then bob), with response targets so the SLA is measured
ONCALL = """
priorities:
  P1: {ack_within: 5m, resolve_within: 1h}
severities: {critical: P1}
""" + INCIDENTS_ONCALL


def rfc(seconds: float) -> str:
    return when(seconds).replace(" UTC", "Z").replace(" ", "T")


@pytest.fixture
def seeded(tmp_path):
    """Incidents on node-1 GPU 0 (40 days ago, 3 days ago, now), node-1 GPU 2 (yesterday), node-2; the
    one now is acknowledged by bob after an escalation, then resolved."""
    clock = FakeClock(T0)
    app = create_app(make_settings(tmp_path), parse_oncall(ONCALL), run_worker=False, clock=clock)
    with TestClient(app) as client:
        def open_at(at, fp, node="node-1", gpu="0"):
            clock.now = at
            body = payload(alert(fp, starts=rfc(at - 60), node=node, gpu=gpu, uuid=f"GPU-{node}-{gpu}", job_id="job-7"),
                           group_key=f"g-{fp}")
            response = client.post(HOOK, json=body, headers=AUTH)
            assert response.status_code == 200, response.text
            return response.json()["incident_id"]

        old, recent, other_gpu, other_node = (open_at(T0 - 40 * DAY, "old"), open_at(T0 - 3 * DAY, "recent"),
                                              open_at(T0 - DAY, "gpu2", gpu="2"), open_at(T0 - 3600, "n2", node="node-2"))
        main = open_at(T0, "main")
        for at, verb, who in ((T0 + 120, "escalate", "carol"), (T0 + 200, "ack", "bob"), (T0 + 900, "resolve", "bob")):
            clock.now = at
            assert client.post(f"/api/v1/incidents/{main}/{verb}", json={"by": who}, headers=AUTH).status_code == 200
        detail = client.get(f"/api/v1/incidents/{main}", headers=AUTH).json()
        others = client.get("/api/v1/incidents", headers=AUTH).json()["incidents"]
    return dict(detail=detail, others=others, ids=dict(old=old, recent=recent, other_gpu=other_gpu,
                                                        other_node=other_node, main=main), now=T0 + 1000)
