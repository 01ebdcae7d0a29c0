"""One process serving a whole simulated fleet: a scrape target per node plus the chaos API.

Node *i* (1-based) has its own `NvmlCollector` over its own `SimulatedNvml`. By default it listens on
port `P + i - 1` (`/metrics`); `node-down` closes that socket, so scrapes get "connection refused"
until the node is cleared. In single-port mode (for large fleets, e.g. 1,250 nodes) every node is
served by one listener as `/metrics?node=node-17`, and a node that is down answers 503. The chaos API
(`exporters.chaos_api`) runs on its own port.

Threads do not grow with the fleet: every listener and connection is served by one event loop
(`exporters.fleet_http`), refreshes run on the scheduler's small pool, and one `XidPump` thread polls
every node's XID event set (woken at once when a fault is injected). About 20 threads for 2,500 nodes.
A node with simulated job slots serves its job attribution too (`exporters.sim.job_sources`), refreshed
with its NVML collector on the same pool.
"""

from __future__ import annotations

import threading
from typing import Any

from vigil.common.hostport import http_url
from vigil.exporters.chaos_api import ChaosApi
from vigil.exporters.fleet_http import Listener, MetricsHost
from vigil.exporters.nvml_collector import NvmlCollector
from vigil.exporters.refresh_scheduler import RefreshScheduler
from vigil.exporters.sim.fleet import SimulatedFleet
from vigil.exporters.sim.job_sources import AttributedNode
from vigil.exporters.xid import XidPump, XidWatcher


class NodeTarget:
    """The scrape endpoint of one node on its own port; `open()`/`close()` model the node up/down."""

    def __init__(self, name: str, http: MetricsHost, host: str, port: int,
                 collector: NvmlCollector | AttributedNode) -> None:
        self.name, self.http, self.host, self.port, self.collector = name, http, host, port, collector
        self._server: Listener | None = None
        self._lock = threading.Lock()

    @property
    def url(self) -> str:
        return http_url(self.host, self.port, "/metrics")

    def open(self) -> None:
        with self._lock:
            if self._server is None:
                self._server = self.http.listen(self.host, self.port, lambda _query: self.collector.exposition())

    def close(self) -> None:
        with self._lock:
            if self._server is not None:
                self._server.close()
                self._server = None


class FleetServer:
    """Runs collectors and scrape targets for every node of `fleet`, and the chaos control API."""

    def __init__(self, fleet: SimulatedFleet, *, host: str = "127.0.0.1", port: int = 9835,
                 control_host: str = "127.0.0.1", control_port: int = 10835, interval: float = 5.0,
                 single_port: bool = False, workers: int = 8, nvlink_per_link: bool = False) -> None:
        self.fleet = fleet
        self.host, self.port, self.single_port = host, port, single_port
        self.collectors = {name: NvmlCollector(fleet.nvml[name], name, interval=interval, watch_xids=False,
                                           nvlink_per_link=nvlink_per_link)
                           for name in fleet.names}
        # one thread polls every node's XID events; an injected fault wakes it at once
        self.xids = XidPump([XidWatcher(fleet.nvml[name], c.handles, c.record_xid) for name, c in self.collectors.items()],
                            period_s=1.0)
        # what each node serves and refreshes: its NVML collector, plus job attribution on job nodes
        self.pages: dict[str, NvmlCollector | AttributedNode] = {
            name: AttributedNode(c, fleet.jobs, fleet.clock) if fleet.jobs.manages(name) else c
            for name, c in self.collectors.items()}
        self.http = MetricsHost()
        self.targets = {} if single_port else {
            name: NodeTarget(name, self.http, host, port + offset, self.pages[name])
            for offset, name in enumerate(fleet.names)}
        self.scheduler = RefreshScheduler(list(self.pages.values()), interval, workers=workers)
        self.shared: Listener | None = None
        fleet.add_listener(self._node_state)
        fleet.add_fault_listener(lambda _fault: self.xids.wake())
        self.chaos = ChaosApi(fleet, control_host, control_port, self.describe)

    @property
    def control_url(self) -> str:
        return self.chaos.url

    def node_url(self, name: str) -> str:
        if self.single_port:
            return http_url(self.host, self.port, f"/metrics?node={name}")
        return self.targets[name].url

    def start(self) -> None:
        """First collection and XID registration of every node, then listeners, scheduler, XID pump and chaos API."""
        for name, collector in self.collectors.items():
            collector.start(loop=False)
            if self.pages[name] is not collector:
                self.pages[name].refresh()  # the job attribution's first cycle
            self.pages[name].exposition()  # rendered now: the first scrape round of a large fleet finds every page ready
        self.xids.sweep()  # every GPU registered for XID events before the chaos API can inject one
        if self.single_port:
            self.shared = self.http.listen(self.host, self.port, self._shared_body)
        for target in self.targets.values():
            target.open()
        self.scheduler.start()
        self.xids.start()
        self.chaos.start()

    def stop(self) -> None:
        """Stop everything: chaos API, refreshes, XID pump, listeners and their connections, NVML."""
        self.chaos.close()
        self.scheduler.stop()
        self.xids.stop()
        self.http.close()
        for collector in self.collectors.values():
            collector.stop()

    def _shared_body(self, query: dict[str, str]) -> bytes:
        name = query.get("node")
        if name not in self.collectors:
            raise LookupError(f"unknown or missing node {name!r}: use /metrics?node=node-1 .. node-{len(self.collectors)}")
        if self.fleet.is_down(name):
            raise ConnectionAbortedError(f"{name} is down (simulated)")
        return self.pages[name].exposition()

    def _node_state(self, node: str, up: bool) -> None:
        target = self.targets.get(node)
        if target is not None:
            target.open() if up else target.close()

    def describe(self) -> dict[str, Any]:
        """The body of GET /chaos."""
        return {"nodes": [{"name": n, "url": self.node_url(n), "gpus": self.fleet.gpus} for n in self.collectors],
                "faults": [f.to_json() for f in self.fleet.faults()],
                "jobs": self.fleet.jobs.describe(self.fleet.clock())}
