"""End to end: several simulated faults injected at once into a `vigil up` stack, one per node, each
paged exactly once with its rule's severity; node-down pages the node, never its GPUs; the disk fault
reaches the node health exporter's simulated SMART data and pages the disk rule; the disk drill runs."""

from __future__ import annotations

import json
import socket
import time
from collections import Counter

import pytest
import requests

from stack_support import RunningStack, start_stack, wait_for

pytestmark = pytest.mark.e2e

# fault, node, GPU -> the alert it must raise, with its severity. One node each: the node health
# exporter of the demo plays node-1, so the disk fault goes there. A failing disk and a burst of
# application XIDs file tickets (they wait for working hours, so whether their page is sent yet depends
# on the hour: they are checked as incidents); the others page.
FAULTS = [
    ({"fault": "disk-failing", "node": "node-1"}, "DiskSmartUncorrectableSectors", "warning"),
    ({"fault": "node-down", "node": "node-2"}, "GpuNodeDown", "critical"),
    ({"fault": "xid79", "node": "node-3", "gpu": 1}, "GpuFallenOffBus", "critical"),
    ({"fault": "ecc-dbe", "node": "node-4", "gpu": 0}, "GpuUncorrectableEccErrors", "critical"),
    ({"fault": "xid-burst", "node": "node-5", "gpu": 1, "xid": 13, "count": 13}, "GpuApplicationXidSpike", "warning"),
]
# After the last expected page: Prometheus evaluates every 1 s with `for` capped at 2 s, Alertmanager
# waits 1 s per group, so a second alert caused by one of these faults would page within this window.
SETTLE_S = 6.0


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    running = start_stack(tmp_path_factory.mktemp("faults-stack"), nodes=5, gpus=2)
    yield running
    assert running.cli("down").returncode == 0


def inbox(stack: RunningStack) -> list[dict]:
    r = requests.get(f"{stack.url('notifier')}/api/v1/inbox", params={"limit": 500},
                     headers={"Authorization": f"Bearer {stack.token()}"}, timeout=5)
    r.raise_for_status()
    return r.json()["pages"]


def first_pages(pages: list[dict]) -> list[dict]:
    """Firing pages of the first tier about the simulated fleet: one per incident unless something paged
    twice (escalation aside). The stack's node_exporter reads the real machine the tests run on (a full
    disk there pages too, as this host): its alerts are the host's, not the faults'. Tickets are left out:
    whether theirs is sent yet depends on the hour."""
    return [p for p in pages if p["status"] == "firing" and not p.get("tier")
            and p["labels"].get("job") != "node-exporter" and p["labels"].get("notify") != "ticket"]


def incidents(stack: RunningStack) -> list[dict]:
    """The notifier's incidents about the simulated fleet (the host's node_exporter left out)."""
    r = requests.get(f"{stack.url('notifier')}/api/v1/incidents", params={"limit": 500},
                     headers={"Authorization": f"Bearer {stack.token()}"}, timeout=5)
    r.raise_for_status()
    return [i for i in r.json()["incidents"] if i["labels"].get("job") != "node-exporter"]


TICKETS = {"DiskSmartUncorrectableSectors", "GpuApplicationXidSpike"}


def chaos(stack: RunningStack, path: str, body: dict) -> dict:
    control = stack.state()["urls"]["gpu_control"]
    r = requests.post(f"{control}{path}", json=body, timeout=5)
    assert r.status_code == 200, r.text
    return r.json()


def test_each_fault_pages_or_files_a_ticket_once_and_node_down_pages_the_node_only(stack: RunningStack):
    started = time.monotonic()
    for body, _, _ in FAULTS:
        chaos(stack, "/chaos/inject", body)
    try:
        expected = {(alert, body["node"]) for body, alert, _ in FAULTS if alert not in TICKETS}
        filed = {(alert, body["node"]) for body, alert, _ in FAULTS if alert in TICKETS}
        deadline = time.monotonic() + 60
        while True:
            pages = first_pages(inbox(stack))
            paged = {(p["labels"].get("alertname"), p["labels"].get("node")) for p in pages}
            opened = {(i["labels"].get("alertname"), i["labels"].get("node")) for i in incidents(stack)}
            if (expected <= paged and filed <= opened) or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        assert expected <= paged, f"missing pages: {sorted(expected - paged)}; got {sorted(paged)}"
        assert filed <= opened, f"missing tickets: {sorted(filed - opened)}; got {sorted(opened)}"
        all_paged_s = time.monotonic() - started
        settle_until = time.monotonic() + SETTLE_S
        while time.monotonic() < settle_until:  # watch for second pages; stop at the first one
            pages = first_pages(inbox(stack))
            if len([p for p in pages if "node" in p["labels"]]) > len(expected):
                break
            time.sleep(0.5)
        per_node = Counter(p["labels"].get("node") for p in pages)
        opened = incidents(stack)
        for body, alert, severity in FAULTS:
            mine = [i for i in opened if i["labels"].get("node") == body["node"]]
            assert [(i["labels"]["alertname"], i["labels"]["severity"]) for i in mine] == [(alert, severity)], \
                f"{body['fault']} on {body['node']} opened {[i['labels'] for i in mine]}"
            if alert in TICKETS:  # a ticket: the ticket priority, and no page sent out of working hours yet
                assert mine[0]["priority"] == "P5" and per_node[body["node"]] == 0
            else:
                assert per_node[body["node"]] == 1
            if "gpu" in body:
                assert mine[0]["labels"]["gpu"] == str(body["gpu"])
        down = next(p for p in pages if p["labels"]["alertname"] == "GpuNodeDown")
        assert "gpu" not in down["labels"] and "node-2" in down["title"] + down["body"]
        disk = next(i for i in opened if i["labels"]["alertname"] == "DiskSmartUncorrectableSectors")
        assert disk["labels"]["device"] == "/dev/sda"  # disk 0 of the simulated node: a SATA SSD
        assert len([p for p in pages if "node" in p["labels"]]) == len(expected), [p["labels"] for p in pages]
        print(f"all {len(FAULTS)} faults paged {all_paged_s:.1f}s after the injections")
    finally:
        chaos(stack, "/chaos/clear", {})


def test_disk_fault_shows_in_the_chaos_list_and_the_smart_metrics(stack: RunningStack):
    listed = stack.cli("chaos", "inject", "disk-failing", "--node", "node-1", "--param", "disk=1")
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.startswith("injected disk-failing on node-1 disk 1: ")
    try:
        assert "disk-failing@node-1 disk 1" in stack.cli("chaos", "list").stdout
        prom = stack.url("prometheus")
        query = 'vigil_disk_nvme_media_errors_total{node="node-1", device="/dev/nvme0"}'
        deadline = time.monotonic() + 20
        value = 0.0
        while value == 0.0 and time.monotonic() < deadline:
            result = requests.get(f"{prom}/api/v1/query", params={"query": query}, timeout=5).json()["data"]["result"]
            value = float(result[0]["value"][1]) if result else 0.0
            time.sleep(0.5)
        assert value > 0, "disk 1 (NVMe) of node-1 shows no media errors after disk-failing"
    finally:
        assert chaos(stack, "/chaos/clear", {"node": "node-1"})["cleared"] == 1


def test_disk_drill_files_a_ticket_acknowledges_and_resolves(stack: RunningStack):
    """A failing disk files a ticket: the drill checks what holds at any hour (filed, then resolved)."""
    result = stack.cli("drill", "disk-failing", "--node", "node-1", "--timeout", "40", "--json", timeout=300)
    assert result.stdout, result.stderr
    report = json.loads(result.stdout)
    assert result.returncode == 0 and report["ok"], report
    names = [s["name"] for s in report["stages"]]
    assert names[0] == "injected → seen in a scrape" and names[-2:] == ["ticket resolved", "one incident"]
    assert names[3:5] == ["ticket filed", "acknowledged"]
    filed = report["stages"][3]["detail"]
    assert filed.startswith("ticket: incident #") and (", held until " in filed or filed.endswith(", sent"))
    incident = int(filed.split("#")[1].split()[0])
    detail = requests.get(f"{stack.url('notifier')}/api/v1/incidents/{incident}", timeout=5,
                          headers={"Authorization": f"Bearer {stack.token()}"}).json()
    assert detail["state"] == "resolved" and detail["priority"] == "P5"
    assert {page["tier"] for page in detail["pages"]} == {0}  # the first tier only: never escalated


def test_a_down_node_mutes_its_disk_alert_through_the_inhibition(stack: RunningStack):
    """The node health exporter stays up in the demo when node-1's GPU target goes down, so its disk
    alert does fire: Alertmanager must hold it back (GpuNodeDown mutes every alert with the same node)."""
    before = {p["id"] for p in inbox(stack)}
    chaos(stack, "/chaos/inject", {"fault": "node-down", "node": "node-1"})
    try:
        wait_for(lambda: any(p["id"] not in before and p["labels"].get("alertname") == "GpuNodeDown"
                             and p["labels"].get("node") == "node-1" for p in first_pages(inbox(stack))),
                 "GpuNodeDown page for node-1")
        chaos(stack, "/chaos/inject", {"fault": "disk-failing", "node": "node-1"})
        am = stack.url("alertmanager")

        def disk_alerts() -> list[dict]:
            r = requests.get(f"{am}/api/v2/alerts", timeout=5,
                             params={"filter": ['alertname="DiskSmartUncorrectableSectors"', 'node="node-1"']})
            return r.json()

        wait_for(lambda: disk_alerts() != [], "DiskSmartUncorrectableSectors of node-1 in Alertmanager")
        for alert in disk_alerts():
            assert alert["status"]["state"] == "suppressed" and alert["status"]["inhibitedBy"], alert
        new = [p for p in inbox(stack) if p["id"] not in before and p["labels"].get("node") == "node-1"]
        assert [p["labels"]["alertname"] for p in first_pages(new)] == ["GpuNodeDown"]
    finally:
        chaos(stack, "/chaos/clear", {"node": "node-1"})




def test_node_exporter_carries_the_host_and_node_health_the_node_it_simulates(stack: RunningStack):
    prom = stack.url("prometheus")
    query = 'up{job=~"node-exporter|vigil-node-health"}'

    def targets() -> list[tuple[str, str | None]]:
        result = requests.get(f"{prom}/api/v1/query", params={"query": query}, timeout=5).json()["data"]["result"]
        return sorted((r["metric"]["job"], r["metric"].get("node")) for r in result)

    # run on its own, the test may come before Prometheus' first scrape of either target
    wait_for(lambda: len(targets()) == 2, "both targets scraped")
    assert targets() == [("node-exporter", socket.gethostname()), ("vigil-node-health", "node-1")]
