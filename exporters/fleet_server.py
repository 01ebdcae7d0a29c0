"""One process serving a whole simulated fleet: a scrape target per node plus a JSON chaos API.

Node *i* (1-based) serves `/metrics` on port `P + i - 1` from its own registry, filled by its own
`NvmlCollector` over its own `SimulatedNvml`. The control API (another port) lists nodes and faults
and injects/clears faults:

    GET  /healthz        -> {"ok": true}
    GET  /chaos          -> {"nodes": [{"name", "url", "gpus"}...], "faults": [{"fault", "node", "gpu", "since", ...}]}
    POST /chaos/inject   {"fault": "xid79", "node": "node-2", "gpu": 3}  -> {"ok": true, "fault": {...}}
    POST /chaos/clear    {"node": "node-2"} or {}                         -> {"ok": true, "cleared": n}

Bad requests get 400 `{"error": "<reason>"}`. `node-down` closes the node's listening socket, so
scrapes get "connection refused" until the node is cleared.
"""

from __future__ import annotations

import json
import threading
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from prometheus_client import CollectorRegistry, start_http_server

from exporters.nvml_collector import NvmlCollector
from exporters.sim.faults import FaultError
from exporters.sim.fleet import SimulatedFleet

MAX_BODY = 64 * 1024


class NodeTarget:
    """The scrape endpoint of one simulated node; `open()`/`close()` model the node going up/down."""

    def __init__(self, name: str, host: str, port: int, registry: CollectorRegistry) -> None:
        self.name, self.host, self.port, self.registry = name, host, port, registry
        self._server: Any = None
        self._lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}/metrics"

    def open(self) -> None:
        with self._lock:
            if self._server is None:
                self._server, _thread = start_http_server(self.port, addr=self.host, registry=self.registry)

    def close(self) -> None:
        with self._lock:
            if self._server is not None:
                self._server.shutdown()
                self._server.server_close()
                self._server = None


class FleetServer:
    """Runs collectors and scrape targets for every node of `fleet`, and the chaos control API."""

    def __init__(self, fleet: SimulatedFleet, *, host: str = "127.0.0.1", port: int = 9835,
                 control_host: str = "127.0.0.1", control_port: int = 10835, interval: float = 5.0) -> None:
        self.fleet = fleet
        self.collectors: dict[str, NvmlCollector] = {}
        self.targets: dict[str, NodeTarget] = {}
        for offset, name in enumerate(fleet.names):
            registry = CollectorRegistry()
            collector = NvmlCollector(fleet.nvml[name], name, interval=interval)
            registry.register(collector)
            self.collectors[name] = collector
            self.targets[name] = NodeTarget(name, host, port + offset, registry)
        fleet.add_listener(self._node_state)
        self.control = ThreadingHTTPServer((control_host, control_port), _control_handler(self))
        self.control.daemon_threads = True
        self._control_thread: threading.Thread | None = None

    @property
    def control_url(self) -> str:
        host, port = self.control.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> None:
        """Start collectors, open every scrape target, serve the control API (all in background threads)."""
        for collector in self.collectors.values():
            collector.start()
        for target in self.targets.values():
            target.open()
        self._control_thread = threading.Thread(target=self.control.serve_forever, name="vigil-chaos-api", daemon=True)
        self._control_thread.start()

    def stop(self) -> None:
        """Stop everything; in parallel, since each listener and thread takes up to half a second to notice."""
        self.control.shutdown()
        self.control.server_close()
        steps = [t.close for t in self.targets.values()] + [c.stop for c in self.collectors.values()]
        with ThreadPoolExecutor(max_workers=min(64, len(steps))) as pool:
            list(pool.map(lambda step: step(), steps))

    def _node_state(self, node: str, up: bool) -> None:
        target = self.targets[node]
        target.open() if up else target.close()

    def describe(self) -> dict[str, Any]:
        """The body of GET /chaos."""
        return {"nodes": [{"name": t.name, "url": t.url, "gpus": self.fleet.gpus} for t in self.targets.values()],
                "faults": [f.to_json() for f in self.fleet.faults()]}


def _control_handler(server: FleetServer) -> type[BaseHTTPRequestHandler]:
    """A request-handler class bound to `server` (http.server instantiates it per request)."""

    class ControlHandler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # keep the terminal for real news
            pass

        def _reply(self, status: int, body: dict[str, Any]) -> None:
            data = json.dumps(body, sort_keys=False).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _body(self) -> Any:
            length = int(self.headers.get("Content-Length") or 0)
            if length > MAX_BODY:
                raise FaultError(f"body larger than {MAX_BODY} bytes")
            raw = self.rfile.read(length) if length else b"{}"
            try:
                return json.loads(raw or b"{}")
            except (UnicodeDecodeError, json.JSONDecodeError) as error:
                raise FaultError(f"body is not valid JSON: {error}") from None

        def do_GET(self) -> None:
            path = self.path.split("?", 1)[0]
            if path == "/healthz":
                self._reply(200, {"ok": True})
            elif path == "/chaos":
                self._reply(200, server.describe())
            else:
                self._reply(404, {"error": f"no such endpoint {path}; try GET /chaos"})

        def do_POST(self) -> None:
            path = self.path.split("?", 1)[0]
            try:
                body = self._body()
                if path == "/chaos/inject":
                    fault = server.fleet.inject(body)
                    self._reply(200, {"ok": True, "fault": fault.to_json()})
                elif path == "/chaos/clear":
                    if not isinstance(body, dict):
                        raise FaultError("body must be a JSON object: {} or {\"node\": \"node-1\"}")
                    self._reply(200, {"ok": True, "cleared": server.fleet.clear(body.get("node"))})
                else:
                    self._reply(404, {"error": f"no such endpoint {path}; use /chaos/inject or /chaos/clear"})
            except (FaultError, ValueError) as error:
                self._reply(400, {"error": str(error)})

    return ControlHandler
