"""The `disk-failing` chaos fault: injected through the fleet's chaos API over real HTTP, read back by
the node health exporter's simulated smartctl, and gone again after a clear."""

from __future__ import annotations

import pytest
import requests
from click.testing import CliRunner
from exporters_nvml_support import free_ports, wait_until
from test_exporters_node import scrape, value

from vigil.cli.node_exporter import node
from vigil.common.ports import free_port
from vigil.exporters.fleet_server import FleetServer
from vigil.exporters.node_health import NodeHealthCollector
from vigil.exporters.sim.faults import FaultError, parse_fault, per_gpu
from vigil.exporters.sim.fleet import SimulatedFleet
from vigil.exporters.sim.smart import ChaosDiskFaults, SimulatedSmartctl
from vigil.exporters.smart import SmartReader


@pytest.fixture()
def chaos_api():
    base = free_ports(3)
    server = FleetServer(SimulatedFleet(2, 2), port=base, control_port=base + 2, interval=0.05)
    server.start()
    yield server.control_url
    server.stop()


def exporter(node_name: str, api: str) -> NodeHealthCollector:
    """The node health exporter of `vigil up`: simulated disks, faults from the chaos API, a pass per scrape."""
    smartctl = SimulatedSmartctl(node_name, 4, chaos=ChaosDiskFaults(api, node_name))
    return NodeHealthCollector(node_name, SmartReader(smartctl), sysfs_root="/nonexistent", interval=0.0)


def pending(text: str, device: str) -> float:
    return value(text, "vigil_disk_smart_attribute_raw", device=device, attribute_id="197")


def test_disk_failing_is_a_node_fault_with_a_disk_index():
    nodes = {"node-1": 8}
    fault = parse_fault({"fault": "disk-failing", "node": "node-1", "gpu": 3, "disk": 2}, nodes)
    assert (fault.gpu, fault.params) == (None, {"disk": 2})
    assert not per_gpu("disk-failing") and not per_gpu("node-down") and per_gpu("xid79")
    with pytest.raises(FaultError, match="disk must be an integer in 0..63"):
        parse_fault({"fault": "disk-failing", "node": "node-1", "disk": 64}, nodes)


def test_the_fleet_keeps_disk_faults_beside_its_gpu_faults():
    """Disk faults live in the fleet, as node-down does: listed and cleared with the rest, GPUs untouched."""
    fleet = SimulatedFleet(nodes=2, gpus=2)
    first = fleet.inject({"fault": "disk-failing", "node": "node-2", "disk": 1})
    assert fleet.inject({"fault": "disk-failing", "node": "node-2", "disk": 1}) is first  # keeps the first start
    fleet.inject({"fault": "xid79", "node": "node-1", "gpu": 0})
    assert [(f.fault, f.node) for f in fleet.faults()] == [("xid79", "node-1"), ("disk-failing", "node-2")]
    assert not fleet.nvml["node-2"].active_faults()
    assert fleet.clear("node-2") == 1 and [f.fault for f in fleet.faults()] == ["xid79"]


def test_injected_disk_fault_grows_in_the_smart_data_of_its_node_only_until_cleared(chaos_api):
    node1, node2 = exporter("node-1", chaos_api), exporter("node-2", chaos_api)
    assert pending(scrape(node1), "/dev/sda") == 0
    reply = requests.post(f"{chaos_api}/chaos/inject", json={"fault": "disk-failing", "node": "node-1"}, timeout=5)
    assert reply.status_code == 200 and reply.json()["fault"]["gpu"] is None
    wait_until(lambda: pending(scrape(node1), "/dev/sda") > 0)  # a pass per scrape: the next one shows it
    text = scrape(node1)
    assert pending(text, "/dev/sda") >= 50  # about an hour of failing already: alerts fire at once
    assert value(text, "vigil_disk_smart_attribute_raw", device="/dev/sda", attribute_id="198") > 0
    assert pending(text, "/dev/sdb") == 0 and pending(scrape(node2), "/dev/sda") == 0
    [listed] = requests.get(f"{chaos_api}/chaos", timeout=5).json()["faults"]
    assert (listed["fault"], listed["node"], listed["gpu"]) == ("disk-failing", "node-1", None)

    cleared = requests.post(f"{chaos_api}/chaos/clear", json={"node": "node-1"}, timeout=5).json()
    assert cleared == {"ok": True, "cleared": 1}
    wait_until(lambda: pending(scrape(node1), "/dev/sda") == 0)
    assert requests.get(f"{chaos_api}/chaos", timeout=5).json()["faults"] == []


def test_an_nvme_disk_fails_with_media_errors(chaos_api):
    node1 = exporter("node-1", chaos_api)
    body = {"fault": "disk-failing", "node": "node-1", "disk": 1}
    assert requests.post(f"{chaos_api}/chaos/inject", json=body, timeout=5).ok
    wait_until(lambda: value(scrape(node1), "vigil_disk_nvme_media_errors_total", device="/dev/nvme0") > 0)
    assert requests.post(f"{chaos_api}/chaos/clear", json={}, timeout=5).json()["cleared"] == 1


def test_a_bad_disk_fault_request_is_refused_and_changes_nothing(chaos_api):
    for body, reason in (({"fault": "disk-failing", "node": "node-9"}, "unknown node"),
                         ({"fault": "disk-failing", "node": "node-1", "disk": -1}, "disk must be an integer")):
        reply = requests.post(f"{chaos_api}/chaos/inject", json=body, timeout=5)
        assert reply.status_code == 400 and reason in reply.json()["error"]
    assert requests.get(f"{chaos_api}/chaos", timeout=5).json()["faults"] == []


def test_the_exporter_keeps_the_last_known_faults_while_the_chaos_api_is_unreachable(chaos_api):
    faults = ChaosDiskFaults(chaos_api, "node-1", timeout=1)
    assert requests.post(f"{chaos_api}/chaos/inject", json={"fault": "disk-failing", "node": "node-1"}, timeout=5).ok
    assert list(faults()) == [0]
    faults.url = f"http://127.0.0.1:{free_port()}/chaos"  # nothing listens there
    assert list(faults()) == [0]


def test_sim_chaos_url_needs_simulate():
    result = CliRunner().invoke(node, ["--sim-chaos-url", "http://127.0.0.1:1", "--once"])
    assert result.exit_code == 2 and "only with --simulate" in result.output


@pytest.mark.parametrize("url", ["127.0.0.1:10835", "ftp://127.0.0.1:1", "http://"])
def test_sim_chaos_url_must_be_an_http_url(url: str):
    """The reader keeps the last faults while the API is unreachable, so a URL it can never use would
    fail silently at every pass: it is refused at start instead."""
    result = CliRunner().invoke(node, ["--simulate", "--sim-chaos-url", url, "--once"])
    assert result.exit_code == 2 and "expected an http:// URL" in result.output  # a usage error, no traceback
