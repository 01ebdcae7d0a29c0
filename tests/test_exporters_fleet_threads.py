"""The simulated fleet's threads do not grow with its nodes or with the scrapers' kept-alive connections."""

from __future__ import annotations

import threading

import requests
from exporters_nvml_support import free_ports, wait_until

from vigil.exporters.fleet_server import FleetServer
from vigil.exporters.sim.fleet import SimulatedFleet

NODES = 60


def test_sixty_nodes_with_a_kept_alive_connection_each_run_on_a_few_threads() -> None:
    before = threading.active_count()
    base = free_ports(NODES + 1)
    server = FleetServer(SimulatedFleet(NODES, 2), port=base, control_port=base + NODES, interval=0.5)
    server.start()
    sessions = [requests.Session() for _ in range(NODES)]
    try:
        for i, session in enumerate(sessions):  # one scraper per node, as Prometheus keeps them open
            assert session.get(f"http://127.0.0.1:{base + i}/metrics", timeout=10).text.count("vigil_gpu_up{") == 2
        added = threading.active_count() - before
        assert added <= 20, f"{added} threads for {NODES} nodes and {NODES} open connections"
        # the XID pump still delivers at once, and node-down still cuts a kept-alive connection
        api = server.control_url
        assert requests.post(f"{api}/chaos/inject", json={"fault": "xid79", "node": f"node-{NODES}", "gpu": 1},
                             timeout=5).ok
        last = f"http://127.0.0.1:{base + NODES - 1}/metrics"
        wait_until(lambda: 'xid="79"' in sessions[-1].get(last, timeout=5).text, timeout=5, step=0.05)
        assert requests.post(f"{api}/chaos/inject", json={"fault": "node-down", "node": "node-1"}, timeout=5).ok
        try:
            sessions[0].get(f"http://127.0.0.1:{base}/metrics", timeout=5)
            raise AssertionError("node-1 answered on its kept-alive connection while down")
        except requests.ConnectionError:
            pass
    finally:
        for session in sessions:
            session.close()
        server.stop()
    wait_until(lambda: threading.active_count() <= before + 1, timeout=10)
