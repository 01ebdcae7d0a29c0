"""The Watchdog's heartbeat in `vigil up`: Alertmanager posts the Watchdog to the notifier's heartbeat,
the notifier watches it, and stopping Alertmanager pages the heartbeat incident within the timeout;
resuming it resolves the incident."""

from __future__ import annotations

import json
import os
import signal
import time

import pytest
import requests

from stack_support import FAST_STACK, RunningStack, free_port_base, vigil
from test_notifier_support import AUTH, NotifierServer, free_port, make_settings, wait_for
from test_rules_alertmanager import gpu_alert
from vigil.stack.components import GpuBackend, component_specs
from vigil.stack.settings import SettingsError, load_settings
from vigil.stack.config import RunLayout, alertmanager_config
from vigil.stack.config.alertmanager import notifier_heartbeat_url
from vigil import rules as rulegen
from vigil.rules.alertmanager_routing import ROUTING_FILE, load_routing

TIMEOUT_S = 8  # the e2e stack's heartbeat_timeout; the Watchdog is re-sent every 2 s


def test_vigil_up_sends_the_watchdog_to_the_heartbeat_the_notifier_watches(tmp_path):
    settings = load_settings(None, {"sim_nodes": 1})
    layout = RunLayout(tmp_path)
    ruleset = rulegen.load_specs(rulegen.default_spec_paths())
    config = alertmanager_config(settings, layout, ruleset, load_routing(ROUTING_FILE, ruleset))
    [watchdog] = [r for r in config["receivers"] if r["name"] == "watchdog"]
    assert [hook["url"] for hook in watchdog["webhook_configs"]] == [notifier_heartbeat_url(settings)]
    assert config["route"]["routes"][0]["repeat_interval"] == "1m"
    binaries = {name: f"/usr/bin/{name}" for name in ("prometheus", "alertmanager", "node-exporter")}
    [notifier] = [s for s in component_specs(settings, layout, binaries, GpuBackend("sim", ["node-1"]))
                  if s.name == "notifier"]
    flag = notifier.argv.index("--heartbeat")
    assert notifier.argv[flag + 1] == "watchdog=3m,team=platform"  # the demo's: three missed minutes page


def test_a_heartbeat_timeout_one_late_watchdog_would_trip_is_refused():
    with pytest.raises(SettingsError, match="heartbeat_timeout must be at least twice"):
        load_settings(None, {"watchdog_repeat_interval": 60, "heartbeat_timeout": 90})


def test_a_heartbeat_timeout_the_notifier_would_refuse_is_refused_with_the_settings():
    with pytest.raises(SettingsError, match="heartbeat_timeout: Input should be less than or equal to 31536000"):
        load_settings(None, {"heartbeat_timeout": "2y"})


@pytest.mark.e2e
def test_stopping_alertmanager_pages_the_heartbeat_incident_and_resuming_it_resolves(tmp_path):
    config = tmp_path / "vigil.yaml"
    config.write_text(FAST_STACK.format(nodes=1, gpus=1, jobs=0, aiops="false", node_health="false", backfill_days=0)
                      + f"  watchdog_repeat_interval: 2\n  heartbeat_timeout: {TIMEOUT_S}\n")
    stack = RunningStack(tmp_path / "run", free_port_base())
    started = vigil("up", "--detach", "--config", str(config), "--run-dir", str(stack.run_dir), "--port-base",
                    str(stack.port_base), "--gpu-backend", "sim", "--no-aiops", timeout=120)
    assert started.returncode == 0, started.stdout + started.stderr
    notifier, auth = stack.url("notifier"), {"Authorization": f"Bearer {stack.token()}"}
    alertmanager_pid = stack.state()["components"]["alertmanager"]["pid"]

    def watchdog() -> dict:
        return requests.get(f"{notifier}/api/v1/heartbeats", headers=auth, timeout=5).json()["heartbeats"][0]

    try:
        wait_for(lambda: watchdog()["state"] == "alive", timeout=30, interval=0.2)  # the Watchdog arrives
        listed = stack.cli("notifier", "heartbeats")
        assert listed.returncode == 0 and listed.stdout.splitlines()[1].split()[:2] == ["watchdog", "alive"], listed
        as_json = stack.cli("notifier", "heartbeats", "--json")
        assert [(h["name"], h["state"]) for h in json.loads(as_json.stdout)["heartbeats"]] == [("watchdog", "alive")]
        os.kill(alertmanager_pid, signal.SIGSTOP)  # Alertmanager hangs: no notification leaves it
        stopped = time.monotonic()
        incident_id = wait_for(lambda: watchdog()["incident_id"], timeout=TIMEOUT_S + 10, interval=0.2)
        # the timeout counts from the last beat, at most 3 s (repeat 2 s + group_interval 1 s) before the stop
        assert TIMEOUT_S - 3 <= time.monotonic() - stopped <= TIMEOUT_S + 8
        row = stack.cli("notifier", "heartbeats").stdout.splitlines()[1].split()
        assert (row[0], row[1], row[-1]) == ("watchdog", "missing", str(incident_id))
        incident = requests.get(f"{notifier}/api/v1/incidents/{incident_id}", headers=auth, timeout=5).json()
        assert incident["labels"]["alertname"] == "HeartbeatMissing" and incident["priority"] == "P1"
        paged = wait_for(lambda: [p for p in requests.get(f"{notifier}/api/v1/incidents/{incident_id}", headers=auth,
                                                          timeout=5).json()["pages"] if p["state"] == "sent"],
                         timeout=10, interval=0.2)
        assert {(p["tier"], p["status"]) for p in paged} == {(0, "firing")}  # the DRI's phone, once
        assert len({p["person"] for p in paged}) == 1

        os.kill(alertmanager_pid, signal.SIGCONT)
        wait_for(lambda: watchdog()["state"] == "alive", timeout=15, interval=0.2)
        shown = requests.get(f"{notifier}/api/v1/incidents/{incident_id}", headers=auth, timeout=5).json()
        assert shown["state"] == "resolved"
        assert len([i for i in requests.get(f"{notifier}/api/v1/incidents", headers=auth, timeout=5).json()["incidents"]
                    if i["labels"].get("alertname") == "HeartbeatMissing"]) == 1
    finally:
        os.kill(alertmanager_pid, signal.SIGCONT)
        stack.cli("down")


@pytest.mark.e2e
def test_a_restarted_notifier_does_not_reconcile_the_watchdog_into_an_incident(alertmanager, tmp_path):
    """Reconciliation at start reads every firing group: the Watchdog's must not become a page."""
    from vigil.notifier.reconcile import HEARTBEAT_RECEIVERS
    from vigil.rules.alertmanager import WATCHDOG_RECEIVER

    assert HEARTBEAT_RECEIVERS == {WATCHDOG_RECEIVER}
    requests.post(f"{alertmanager}/api/v2/alerts", timeout=5, json=[
        {"labels": {"alertname": "Watchdog", "severity": "info", "team": "platform"}},
        gpu_alert("GpuFallenOffBus", "node-1", "0")]).raise_for_status()
    wait_for(lambda: len(requests.get(f"{alertmanager}/api/v2/alerts/groups", timeout=5).json()) == 2, timeout=15)
    settings = make_settings(tmp_path, port=free_port(), alertmanager_url=alertmanager)
    with NotifierServer(settings) as server:
        reconciled = wait_for(lambda: [line for line in requests.get(f"{server.url}/metrics", timeout=5).text.splitlines()
                                       if line.startswith("vigil_notifier_reconciled_alerts_total ")
                                       and not line.endswith(" 0.0")], timeout=15)  # the pass is over
        assert reconciled == ["vigil_notifier_reconciled_alerts_total 1.0"]
        [incident] = requests.get(f"{server.url}/api/v1/incidents", headers=AUTH, timeout=5).json()["incidents"]
        assert incident["labels"]["alertname"] == "GpuFallenOffBus"
