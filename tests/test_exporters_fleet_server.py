"""The simulated fleet server over real HTTP: scrape targets per node and the chaos control API."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest
import requests
from prometheus_client.parser import text_string_to_metric_families
from exporters_nvml_support import free_ports, wait_until

from vigil.exporters.fleet_server import FleetServer
from vigil.exporters.gpu_specs import PROFILING
from vigil.exporters.sim.fleet import SimulatedFleet


@pytest.fixture()
def fleet_server():
    base = free_ports(4)
    server = FleetServer(SimulatedFleet(3, 4), port=base, control_port=base + 3, interval=0.05)
    server.start()
    yield server, base
    server.stop()


def gpu_up(url: str) -> dict[str, float]:
    text = requests.get(url, timeout=5).text
    return {line.split('gpu="')[1].split('"')[0]: float(line.rsplit(" ", 1)[1])
            for line in text.splitlines() if line.startswith("vigil_gpu_up{")}


def test_each_node_is_its_own_target(fleet_server) -> None:
    server, base = fleet_server
    api = server.control_url
    assert requests.get(f"{api}/healthz", timeout=5).json() == {"ok": True}
    listing = requests.get(f"{api}/chaos", timeout=5).json()
    assert listing["faults"] == []
    assert listing["nodes"] == [{"name": f"node-{i}", "url": f"http://127.0.0.1:{base + i - 1}/metrics", "gpus": 4}
                                for i in (1, 2, 3)]
    for node in listing["nodes"]:
        body = requests.get(node["url"], timeout=5).text
        assert f'node="{node["name"]}"' in body and 'node="node-' + ("1" if node["name"] != "node-1" else "2") not in body


def test_a_fleet_node_answers_as_a_real_h100_sxm(fleet_server) -> None:
    """A simulated node exports what the real H100 captures (tests/data/nvml) do, but for what it models on
    purpose (NVLink of an HGX board, jobs), and counts as many refused NVML calls a GPU."""
    server, base = fleet_server
    url = f"http://127.0.0.1:{base}/metrics"
    wait_until(lambda: "vigil_gpu_up{" in requests.get(url, timeout=5).text)
    simulated = sample_values(requests.get(url, timeout=5).text)
    idle, load = (sample_values((Path(__file__).parent / "data" / "nvml" / f"h100-sxm-{c}.prom").read_text())
                  for c in ("idle", "load"))
    on_purpose = {"vigil_gpu_nvlink_errors_total", "vigil_gpu_job", "vigil_job_info", "vigil_gpu_processes",
                  # GPM's profiling ratios, which the exporter reads since after the captures were taken
                  *(spec.name for spec in PROFILING)}
    assert set(simulated) - set(idle) - set(load) - on_purpose == set()

    def refused_per_gpu(found: dict[str, list]) -> float:
        [refused] = {v for labels, v in found["vigil_exporter_nvml_errors_total"] if labels["code"] == "not_supported"}
        return refused / len(found["vigil_gpu_up"])

    assert refused_per_gpu(simulated) == refused_per_gpu(idle) == refused_per_gpu(load) > 0


def sample_values(text: str) -> dict[str, list[tuple[dict[str, str], float]]]:
    found: dict[str, list] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found.setdefault(sample.name, []).append((sample.labels, sample.value))
    return found


def test_inject_xid79_then_clear(fleet_server) -> None:
    server, base = fleet_server
    api, node2 = server.control_url, f"http://127.0.0.1:{base + 1}/metrics"
    reply = requests.post(f"{api}/chaos/inject", json={"fault": "xid79", "node": "node-2", "gpu": 3}, timeout=5)
    assert reply.status_code == 200
    assert reply.json()["ok"] is True and reply.json()["fault"]["gpu"] == 3
    wait_until(lambda: gpu_up(node2) == {"0": 1, "1": 1, "2": 1, "3": 0})
    assert gpu_up(f"http://127.0.0.1:{base}/metrics") == {"0": 1, "1": 1, "2": 1, "3": 1}
    [listed] = requests.get(f"{api}/chaos", timeout=5).json()["faults"]
    assert (listed["fault"], listed["node"], listed["gpu"]) == ("xid79", "node-2", 3)
    assert requests.post(f"{api}/chaos/clear", json={"node": "node-2"}, timeout=5).json() == {"ok": True, "cleared": 1}
    wait_until(lambda: gpu_up(node2)["3"] == 1)


def test_node_down_refuses_connections_until_cleared(fleet_server) -> None:
    server, base = fleet_server
    api, node3 = server.control_url, f"http://127.0.0.1:{base + 2}/metrics"
    assert requests.post(f"{api}/chaos/inject", json={"fault": "node-down", "node": "node-3"}, timeout=5).ok
    with pytest.raises(requests.ConnectionError):
        requests.get(node3, timeout=5)
    assert requests.get(f"http://127.0.0.1:{base}/metrics", timeout=5).ok
    assert requests.post(f"{api}/chaos/clear", json={}, timeout=5).json() == {"ok": True, "cleared": 1}
    assert requests.get(node3, timeout=5).ok


@pytest.mark.parametrize("path, body, reason", [
    ("/chaos/inject", {"fault": "meteor", "node": "node-1"}, "unknown fault"),
    ("/chaos/inject", {"fault": "xid79", "node": "node-7"}, "unknown node"),
    ("/chaos/inject", {"fault": "xid79", "node": "node-1", "gpu": 4}, "gpu must be"),
    ("/chaos/inject", {"fault": "xid-burst", "node": "node-1", "count": "many"}, "count must be"),
    ("/chaos/inject", "not json at all", "not valid JSON"),
    ("/chaos/inject", [1, 2], "JSON object"),
    ("/chaos/clear", {"node": "node-9"}, "unknown node"),
    ("/chaos/inject", {"fault": "xid79", "node": ["node-1"]}, "unknown node"),  # a list where a name goes
    ("/chaos/inject", {"fault": {"x": 1}, "node": "node-1"}, "unknown fault"),
    ("/chaos/clear", {"node": {"a": 1}}, "unknown node"),
    ("/chaos/inject", {"fault": "xid79", "node": "node-1", "deep": json.loads("[" * 100 + "]" * 100)}, "nested"),
    ("/chaos/inject", '{"fault": "xid79", "node": "node-1", "count": ' + "9" * 5000 + "}", "digits"),
])
def test_chaos_api_rejects_bad_requests(fleet_server, path: str, body, reason: str) -> None:
    server, _ = fleet_server
    data = body if isinstance(body, str) else json.dumps(body)
    reply = requests.post(f"{server.control_url}{path}", data=data, timeout=5)
    assert reply.status_code == 400
    assert reason in reply.json()["error"]
    assert requests.get(f"{server.control_url}/chaos", timeout=5).json()["faults"] == []


def test_a_negative_content_length_is_refused_not_waited_on(fleet_server) -> None:
    server, _ = fleet_server
    host, port = server.control_url.removeprefix("http://").rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=5) as conn:
        conn.sendall(b"POST /chaos/inject HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n")
        conn.settimeout(5)
        answer = conn.recv(4096)  # an answer at once, not a handler thread blocked reading to EOF
    assert answer.startswith(b"HTTP/1.") and b" 400 " in answer.split(b"\r\n", 1)[0] + b" "


def test_single_port_mode_serves_every_node_by_query() -> None:
    base = free_ports(2)
    server = FleetServer(SimulatedFleet(5, 2), port=base, control_port=base + 1, interval=0.1, single_port=True)
    server.start()
    try:
        url = f"http://127.0.0.1:{base}/metrics"
        nodes = requests.get(f"{server.control_url}/chaos", timeout=5).json()["nodes"]
        assert [n["url"] for n in nodes] == [f"{url}?node=node-{i}" for i in range(1, 6)]
        assert 'node="node-4"' in requests.get(f"{url}?node=node-4", timeout=5).text
        assert requests.get(f"{url}?node=node-6", timeout=5).status_code == 404
        assert requests.get(url, timeout=5).status_code == 404
        requests.post(f"{server.control_url}/chaos/inject", json={"fault": "node-down", "node": "node-4"}, timeout=5)
        assert requests.get(f"{url}?node=node-4", timeout=5).status_code == 503
        assert requests.get(f"{url}?node=node-5", timeout=5).ok
        requests.post(f"{server.control_url}/chaos/clear", json={}, timeout=5)
        assert requests.get(f"{url}?node=node-4", timeout=5).ok
    finally:
        server.stop()


def test_fault_listing_is_in_fleet_order_and_clear_counts_what_it_cleared() -> None:
    fleet = SimulatedFleet(12, 2)
    fleet.inject({"fault": "xid79", "node": "node-10", "gpu": 1})
    fleet.inject({"fault": "ecc-dbe", "node": "node-2"})
    fleet.inject({"fault": "node-down", "node": "node-11"})
    assert [(f.fault, f.node, f.gpu) for f in fleet.faults()] == [
        ("node-down", "node-11", None), ("ecc-dbe", "node-2", 0), ("xid79", "node-10", 1)]
    assert fleet.clear("node-10") == 1
    assert fleet.clear() == 2 and fleet.faults() == []


def test_scrapes_asking_for_gzip_get_the_same_page_compressed(fleet_server) -> None:
    _server, base = fleet_server
    url = f"http://127.0.0.1:{base}/metrics"
    plain = requests.get(url, headers={"Accept-Encoding": "identity"}, timeout=5)
    zipped = requests.get(url, headers={"Accept-Encoding": "gzip"}, timeout=5)  # requests decompresses
    assert "Content-Encoding" not in plain.headers and zipped.headers["Content-Encoding"] == "gzip"
    assert int(zipped.headers["Content-Length"]) < len(plain.content) / 5
    assert zipped.text.count("vigil_gpu_up{") == plain.text.count("vigil_gpu_up{") == 4
