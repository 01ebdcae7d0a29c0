"""End to end: the real Prometheus, Alertmanager and node_exporter, the simulated fleet and the
notifier, started by `vigil up --detach` with 1 s intervals; faults are paged and resolved."""

from __future__ import annotations

import json
import os
import signal
import time

import pytest
import requests

from stack_support import RunningStack, start_stack

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    running = start_stack(tmp_path_factory.mktemp("stack"))
    pids = [c["pid"] for c in running.state()["components"].values()] + [running.state()["supervisor_pid"]]
    yield running
    result = running.cli("down")
    assert result.returncode == 0, result.stderr
    time.sleep(0.5)
    orphans = [pid for pid in pids if os.path.exists(f"/proc/{pid}") and open(f"/proc/{pid}/stat").read().split(")")[1].split()[0] != "Z"]
    assert orphans == [], f"processes left after vigil down: {orphans}"


def test_status_reports_every_component_healthy(stack: RunningStack):
    result = stack.cli("status", "--json")
    assert result.returncode == 0, result.stdout + result.stderr
    components = json.loads(result.stdout)["components"]
    expected = {"prometheus", "alertmanager", "node-exporter", "notifier", "gpu-fleet", "node-health"}
    assert expected <= set(components)
    assert all(c["healthy"] for c in components.values()), components
    assert components["prometheus"]["url"] == f"http://127.0.0.1:{stack.port_base}"


def test_each_node_is_its_own_target(stack: RunningStack):
    prom = stack.url("prometheus")
    deadline = time.monotonic() + 20
    while True:  # Prometheus lists targets a moment after it reports ready
        targets = requests.get(f"{prom}/api/v1/targets", timeout=5).json()["data"]["activeTargets"]
        gpu = sorted((t["labels"]["node"], t["labels"]["instance"], t["health"]) for t in targets if t["labels"]["job"] == "vigil-gpu")
        if (len(gpu) == 3 and all(h == "up" for *_, h in gpu)) or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert [n for n, _, _ in gpu] == ["node-1", "node-2", "node-3"]
    assert len({i for _, i, _ in gpu}) == 3
    assert all(h == "up" for *_, h in gpu), gpu


@pytest.mark.parametrize("fault, node, gpu", [("xid79", "node-2", 3), ("ecc-dbe", "node-1", 1),
                                              ("overheat", "node-3", 2), ("node-down", "node-2", 0)])
def test_drill_pages_and_resolves(stack: RunningStack, fault, node, gpu):
    result = stack.cli("drill", fault, "--node", node, "--gpu", str(gpu), "--timeout", "60", "--json", timeout=600)
    report = json.loads(result.stdout)
    assert result.returncode == 0 and report["ok"], report
    names = [s["name"] for s in report["stages"]]
    assert names[0] == "injected → seen in a scrape" and names[-1] == "resolved page delivered"
    assert len(names) == 8
    inbox = json.loads(stack.cli("inbox", "--json").stdout)["pages"]
    mine = [p for p in inbox if p["labels"].get("node") == node and (fault == "node-down" or p["labels"].get("gpu") == str(gpu))]
    assert {"firing", "resolved"} <= {p["status"] for p in mine}
    firing = next(p for p in mine if p["status"] == "firing")
    assert node in firing["title"] + firing["body"]
    assert firing["labels"]["severity"] == "critical"


def test_notifier_killed_is_restarted_and_a_fault_meanwhile_is_still_paged(stack: RunningStack):
    state = stack.state()
    old_pid = state["components"]["notifier"]["pid"]
    os.kill(old_pid, signal.SIGKILL)
    inject = stack.cli("chaos", "inject", "xid79", "--node", "node-3", "--gpu", "0")
    assert inject.returncode == 0, inject.stderr
    try:
        deadline = time.monotonic() + 90
        page = None
        while time.monotonic() < deadline and page is None:
            listing = stack.cli("inbox", "--json")
            if listing.returncode == 0:
                page = next((p for p in json.loads(listing.stdout)["pages"] if p["status"] == "firing"
                             and p["labels"].get("alertname") == "GpuFallenOffBus" and p["labels"].get("node") == "node-3"
                             and p["labels"].get("gpu") == "0"), None)
            time.sleep(1)
        assert page is not None, "no page after the notifier was restarted"
        assert stack.state()["components"]["notifier"]["pid"] != old_pid
        log = (stack.run_dir / "logs" / "supervisor.log").read_text()
        assert "notifier exited with code -9; restarting" in log
    finally:
        stack.cli("chaos", "clear", "--node", "node-3")


def rejected_webhooks(notifier: str) -> float:
    metrics = requests.get(f"{notifier}/metrics", timeout=5).text
    return sum(float(line.split()[-1]) for line in metrics.splitlines() if line.startswith("vigil_notifier_webhook_rejected_total{"))


def test_malformed_webhook_gets_4xx_with_reason_and_nothing_is_stored(stack: RunningStack):
    notifier = stack.url("notifier")
    auth = {"Authorization": f"Bearer {stack.token()}"}
    before = requests.get(f"{notifier}/api/v1/notifications", headers=auth, timeout=5).json()["notifications"]
    rejected_before = rejected_webhooks(notifier)
    bad = requests.post(f"{notifier}/api/v1/alerts/alertmanager", data=b"{not json", headers={**auth, "Content-Type": "application/json"}, timeout=5)
    assert 400 <= bad.status_code < 500 and bad.json()["error"]
    wrong_version = requests.post(f"{notifier}/api/v1/alerts/alertmanager", json={"version": "3", "alerts": []}, headers=auth, timeout=5)
    assert 400 <= wrong_version.status_code < 500 and wrong_version.json()["error"]
    no_token = requests.post(f"{notifier}/api/v1/alerts/alertmanager", json={}, timeout=5)
    assert no_token.status_code == 401
    after = requests.get(f"{notifier}/api/v1/notifications", headers=auth, timeout=5).json()["notifications"]
    assert [n["id"] for n in after] == [n["id"] for n in before]
    assert rejected_webhooks(notifier) - rejected_before == 3  # each refusal counted once


def test_second_stack_on_taken_ports_is_refused_clearly(stack: RunningStack, tmp_path):
    from stack_support import vigil

    result = vigil("up", "--run-dir", str(tmp_path / "other"), "--port-base", str(stack.port_base), "--gpu-backend", "sim", "--no-aiops")
    assert result.returncode != 0
    assert "ports already in use" in result.stderr and str(stack.port_base) in result.stderr
    assert "Traceback" not in result.stderr


def test_second_stack_side_by_side_and_no_orphans_when_its_supervisor_is_killed(stack: RunningStack, tmp_path):
    other = start_stack(tmp_path, nodes=1, gpus=2, node_health=False)
    assert other.port_base != stack.port_base
    for running in (stack, other):  # each command finds its own stack through --run-dir
        status = json.loads(running.cli("status", "--json").stdout)["components"]
        assert status["prometheus"]["url"] == f"http://127.0.0.1:{running.port_base}"
        assert all(c["healthy"] for c in status.values())
    state = other.state()
    children = [c["pid"] for c in state["components"].values()]
    os.kill(state["supervisor_pid"], signal.SIGKILL)  # no chance to clean up: PR_SET_PDEATHSIG must do it
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and any(_running(pid) for pid in children):
        time.sleep(0.2)
    assert not [pid for pid in children if _running(pid)], "components outlived their killed supervisor"
    assert "not running" in other.cli("status").stderr  # stale state is reported, not trusted
    assert json.loads(stack.cli("status", "--json").stdout)["components"]["prometheus"]["healthy"]


def _running(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(")")[1].split()[0] != "Z"
    except FileNotFoundError:
        return False
