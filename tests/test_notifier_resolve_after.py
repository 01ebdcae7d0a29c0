"""A flapping alert is one incident and one page: with `incidents.resolve_after`, Alertmanager's
resolution waits that long; the group firing again meanwhile keeps the incident open and pages nobody
(timeline `steady`), and only a resolution that holds through the wait resolves the incident and sends
the resolved page. Driven through a real notifier server on a fake clock."""

from __future__ import annotations

import requests

from sim_clock import SIM_NOW
from test_notifier_support import ONE_DRI, AUTH, NotifierServer, alert, free_port, inbox, make_settings, payload, post_alerts, wait_for

DAMPED = ONE_DRI + "incidents: {resolve_after: 1m}\n"
GROUP = '{}:{alertname="GpuFailureRiskHigh"}'


def risk(status: str, starts: str) -> dict:
    return payload(alert("risk-1", status=status, starts=starts, alertname="GpuFailureRiskHigh"), group_key=GROUP)


def incident(server: NotifierServer, incident_id: int) -> dict:
    return requests.get(f"{server.url}/api/v1/incidents/{incident_id}", headers=AUTH, timeout=5).json()


def test_a_flap_inside_resolve_after_is_one_incident_and_one_page(tmp_path, clock):
    clock.now = SIM_NOW
    with NotifierServer(make_settings(tmp_path, port=free_port()), DAMPED, clock=clock) as server:
        opened = post_alerts(server, risk("firing", "2027-01-15T07:59:00Z"))
        wait_for(lambda: len(inbox(server)) == 1)
        clock.now = SIM_NOW + 20
        assert post_alerts(server, risk("resolved", "2027-01-15T07:59:00Z")) == opened
        waiting = incident(server, opened)
        assert waiting["status"] == "firing" and waiting["resolving_at"] is not None
        clock.now = SIM_NOW + 50  # back within the minute: the same incident, nobody paged
        assert post_alerts(server, risk("firing", "2027-01-15T08:00:50Z")) == opened
        steady = incident(server, opened)
        assert steady["resolving_at"] is None and "steady" in [e["kind"] for e in steady["timeline"]]
        clock.now = SIM_NOW + 60
        post_alerts(server, risk("resolved", "2027-01-15T08:00:50Z"))
        clock.now = SIM_NOW + 100  # 40 s into the wait: still open
        assert incident(server, opened)["status"] == "firing"
        clock.now = SIM_NOW + 121  # the resolution held a minute: resolved, the resolved page goes out
        wait_for(lambda: incident(server, opened)["status"] == "resolved")
        pages = wait_for(lambda: len(inbox(server)) == 2 and inbox(server))
    assert [p["status"] for p in pages] == ["firing", "resolved"]


def test_a_resolution_by_hand_ends_the_wait_so_a_reopened_incident_is_not_settled_again(tmp_path, clock):
    clock.now = SIM_NOW
    with NotifierServer(make_settings(tmp_path, port=free_port()), DAMPED, clock=clock) as server:
        opened = post_alerts(server, risk("firing", "2027-01-15T07:59:00Z"))
        post_alerts(server, risk("resolved", "2027-01-15T07:59:00Z"))
        assert incident(server, opened)["resolving_at"] is not None
        for verb in ("resolve", "reopen"):
            answer = requests.post(f"{server.url}/api/v1/incidents/{opened}/{verb}", json={"by": "alice"},
                                   headers=AUTH, timeout=5)
            assert answer.status_code == 200, answer.text
        reopened = incident(server, opened)
        # the wait ended with the resolution: the engine's pass has nothing of it to settle
        assert reopened["status"] == "firing" and reopened["resolving_at"] is None
