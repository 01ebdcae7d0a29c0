"""A GPU's history on its page, in a real notifier: the same fault on the same GPU within a week turns
the catalogue's repair action (reboot the node) into a hardware inspection, in both page forms, naming
the earlier incident; another GPU's first fault keeps the first action."""

from __future__ import annotations

import requests

from test_notifier_support import ONE_DRI, AUTH, NotifierServer, alert, free_port, inbox, make_settings, payload, post_alerts, wait_for



def lost(gpu: str, starts: str, status: str = "firing") -> dict:
    body = alert(f"lost-{gpu}", status=status, starts=starts, alertname="GpuFallenOffBus", node="node-1", gpu=gpu,
                 uuid=f"GPU-{gpu}", action="reboot_node")
    return payload(body, group_key=f'{{}}:{{alertname="GpuFallenOffBus", node="node-1", gpu="{gpu}"}}')


def firing_page(server: NotifierServer, incident: int) -> dict:
    return wait_for(lambda: next((p for p in inbox(server) if p["incident_id"] == incident
                                  and p["status"] == "firing"), None))


def test_the_same_fault_back_on_a_gpu_within_a_week_says_inspect_the_hardware(tmp_path):
    with NotifierServer(make_settings(tmp_path, port=free_port()), ONE_DRI) as server:
        first = post_alerts(server, lost("3", "2026-11-21T20:00:00Z"))
        assert "action: drain the node and reboot it" in firing_page(server, first)["body"]
        post_alerts(server, lost("3", "2026-11-21T20:00:00Z", status="resolved"))
        wait_for(lambda: requests.get(f"{server.url}/api/v1/incidents/{first}", headers=AUTH,
                                      timeout=5).json()["status"] == "resolved")
        again = post_alerts(server, lost("3", "2026-11-21T21:00:00Z"))  # rebooted, and it fell off the bus again
        assert again != first
        body = firing_page(server, again)["body"]
        assert "action: inspect the hardware: reseat, test or replace the GPU" in body
        assert f"the same fault on this GPU 1h ago (incident #{first})" in body
        assert "reboot" not in body.split("action:", 1)[1].split("\n", 1)[0]
        other = post_alerts(server, lost("5", "2026-11-21T21:00:00Z"))  # another GPU's first time
        assert "action: drain the node and reboot it" in firing_page(server, other)["body"]
