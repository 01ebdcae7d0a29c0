"""One process serving a whole simulated fleet: a scrape target per node plus the chaos API.

Node *i* (1-based) has its own `NvmlCollector` over its own `SimulatedNvml`. By default it listens on
port `P + i - 1` (`/metrics`); `node-down` closes that socket, so scrapes get "connection refused"
until the node is cleared. In single-port mode (for large fleets, e.g. 1,250 nodes) every node is
served by one listener as `/metrics?node=node-17`, and a node that is down answers 503. The chaos API
(`exporters.chaos_api`) runs on its own port.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from vigil.common.hostport import http_url
from vigil.exporters.chaos_api import ChaosApi
from vigil.exporters.metrics_http import MetricsServer
from vigil.exporters.nvml_collector import NvmlCollector
from vigil.exporters.refresh_scheduler import RefreshScheduler
from vigil.exporters.sim.fleet import SimulatedFleet


class NodeTarget:
    """The scrape endpoint of one node on its own port; `open()`/`close()` model the node up/down."""

    def __init__(self, name: str, host: str, port: int, collector: NvmlCollector) -> None:
        self.name, self.host, self.port, self.collector = name, host, port, collector
        self._server: MetricsServer | None = None
        self._lock = threading.Lock()

    @property
    def url(self) -> str:
        return http_url(self.host, self.port, "/metrics")

    def open(self) -> None:
        with self._lock:
            if self._server is None:
                self._server = MetricsServer(self.host, self.port, lambda _query: self.collector.exposition())

    def close(self) -> None:
        with self._lock:
            if self._server is not None:
                self._server.close()
                self._server = None


class FleetServer:
    """Runs collectors and scrape targets for every node of `fleet`, and the chaos control API."""

    def __init__(self, fleet: SimulatedFleet, *, host: str = "127.0.0.1", port: int = 9835,
                 control_host: str = "127.0.0.1", control_port: int = 10835, interval: float = 5.0,
                 single_port: bool = False, workers: int = 8) -> None:
        self.fleet = fleet
        self.host, self.port, self.single_port = host, port, single_port
        # many nodes: XID watchers wait longer per call so 1,250 idle threads stay cheap
        xid_wait_ms = 500 if len(fleet.names) <= 64 else 2000
        self.collectors = {name: NvmlCollector(fleet.nvml[name], name, interval=interval, xid_wait_ms=xid_wait_ms)
                           for name in fleet.names}
        self.targets = {} if single_port else {
            name: NodeTarget(name, host, port + offset, self.collectors[name]) for offset, name in enumerate(fleet.names)}
        self.scheduler = RefreshScheduler(list(self.collectors.values()), interval, workers=workers)
        self.shared: MetricsServer | None = None
        fleet.add_listener(self._node_state)
        self.chaos = ChaosApi(fleet, control_host, control_port, self.describe)

    @property
    def control_url(self) -> str:
        return self.chaos.url

    def node_url(self, name: str) -> str:
        if self.single_port:
            return http_url(self.host, self.port, f"/metrics?node={name}")
        return self.targets[name].url

    def start(self) -> None:
        """First collection of every node, then listeners, scheduler and chaos API (background threads)."""
        for collector in self.collectors.values():
            collector.start(loop=False)
        if self.single_port:
            self.shared = MetricsServer(self.host, self.port, self._shared_body)
        for target in self.targets.values():
            target.open()
        self.scheduler.start()
        self.chaos.start()

    def stop(self) -> None:
        """Stop everything; in parallel, since each listener and thread takes up to half a second to notice."""
        self.chaos.close()
        self.scheduler.stop()
        for collector in self.collectors.values():
            collector.request_stop()
        steps = [t.close for t in self.targets.values()] + [c.stop for c in self.collectors.values()]
        if self.shared is not None:
            steps.append(self.shared.close)
        with ThreadPoolExecutor(max_workers=min(64, len(steps))) as pool:
            list(pool.map(lambda step: step(), steps))

    def _shared_body(self, query: dict[str, str]) -> bytes:
        name = query.get("node")
        if name not in self.collectors:
            raise LookupError(f"unknown or missing node {name!r}: use /metrics?node=node-1 .. node-{len(self.collectors)}")
        if self.fleet.is_down(name):
            raise ConnectionAbortedError(f"{name} is down (simulated)")
        return self.collectors[name].exposition()

    def _node_state(self, node: str, up: bool) -> None:
        target = self.targets.get(node)
        if target is not None:
            target.open() if up else target.close()

    def describe(self) -> dict[str, Any]:
        """The body of GET /chaos."""
        return {"nodes": [{"name": n, "url": self.node_url(n), "gpus": self.fleet.gpus} for n in self.collectors],
                "faults": [f.to_json() for f in self.fleet.faults()]}
