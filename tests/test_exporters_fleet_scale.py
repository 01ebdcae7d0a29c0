"""The 1,250-node x 8-GPU simulated fleet in one process, scraped and broken as at full scale."""

from __future__ import annotations

import pytest
import requests
from exporters_nvml_support import free_ports, wait_until

from vigil.exporters.fleet_server import FleetServer
from vigil.exporters.sim.fleet import SimulatedFleet

NODES = 1250


@pytest.mark.slow
def test_full_scale_fleet_serves_every_node_and_delivers_xids() -> None:
    base = free_ports(2)
    server = FleetServer(SimulatedFleet(NODES, 8), port=base, control_port=base + 1, interval=30, single_port=True)
    server.start()
    try:
        # NVML hands an XID only to event sets registered before it: start() registers every node first
        assert all(watcher.registrations == 1 for watcher in server.xids.watchers)
        url = f"http://127.0.0.1:{base}/metrics"
        session = requests.Session()
        for node in ("node-1", "node-625", f"node-{NODES}"):
            body = session.get(f"{url}?node={node}", timeout=10).text
            assert body.count("vigil_gpu_up{") == 8 and f'node="{node}"' in body
        listing = session.get(f"{server.control_url}/chaos", timeout=10).json()
        assert len(listing["nodes"]) == NODES
        reply = session.post(f"{server.control_url}/chaos/inject",
                             json={"fault": "xid79", "node": f"node-{NODES}", "gpu": 7}, timeout=10)
        assert reply.ok, reply.text
        last = f"{url}?node=node-{NODES}"
        wait_until(lambda: 'xid="79"' in session.get(last, timeout=10).text, timeout=45, step=0.25)
        xid_lines = [line for line in session.get(last, timeout=10).text.splitlines()
                     if line.startswith("vigil_gpu_xid_errors_total{")]
        assert len(xid_lines) == 1 and 'gpu="7"' in xid_lines[0] and xid_lines[0].endswith(" 1.0")
        assert "vigil_gpu_xid_errors_total{" not in session.get(f"{url}?node=node-1249", timeout=10).text
    finally:
        server.stop()
