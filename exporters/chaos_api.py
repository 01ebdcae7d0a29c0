"""The chaos control API of the simulated fleet (JSON over HTTP), served on its own port.

    GET  /healthz        -> {"ok": true}
    GET  /chaos          -> {"nodes": [{"name", "url", "gpus"}...], "faults": [{"fault", "node", "gpu", "since", ...}],
                             "jobs": [{"job_id", "scheduler", "tenant", "user", "start", "end",
                                       "gpus": [{"node", "gpu", "activity"}]}]}   (the jobs running now)
    POST /chaos/inject   {"fault": "xid79", "node": "node-2", "gpu": 3}  -> {"ok": true, "fault": {...}}
                         {"fault": "disk-failing", "node": "node-1", "disk": 0}
                         {"fault": "job-hang", "node": "node-3", "gpu": 0}  -> its "fault" names the "job_id"
    POST /chaos/clear    {"node": "node-2"} or {}                         -> {"ok": true, "cleared": n}

Bad requests get 400 `{"error": "<reason>"}` and change nothing: unknown names, a field of the wrong JSON
type (a list for `node`), a body nested too deep or with an integer of thousands of digits, a
`Content-Length` that is not a number of bytes (`-1` would leave the handler reading until the client
hangs up). Disk faults (`disk-failing`) are kept by
the fleet and listed with the others: the node health exporter reads them from GET /chaos.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler
from typing import Any, Callable

from vigil.common.json_body import BodyRejected, decode_json_body
from vigil.common.hostport import http_url
from vigil.common.http_server import GetAndPostHandler, http_server
from vigil.exporters.sim.faults import FaultError
from vigil.exporters.sim.fleet import SimulatedFleet

MAX_BODY = 64 * 1024


class ChaosApi:
    """Serves the chaos API for `fleet`; `describe()` gives the body of GET /chaos."""

    def __init__(self, fleet: SimulatedFleet, host: str, port: int, describe: Callable[[], dict[str, Any]]) -> None:
        self.fleet = fleet
        self.describe = describe
        self.httpd = http_server(host, port, _control_handler(self))
        self.httpd.daemon_threads = True
        self._thread = threading.Thread(target=self.httpd.serve_forever, name="vigil-chaos-api", daemon=True)

    @property
    def url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return http_url(host, port)

    def start(self) -> None:
        self._thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def _control_handler(server: ChaosApi) -> type[BaseHTTPRequestHandler]:
    """A request-handler class bound to `server` (http.server instantiates it per request)."""

    class ControlHandler(GetAndPostHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # small JSON replies on keep-alive connections (see metrics_http)

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
            given = (self.headers.get("Content-Length") or "0").strip()
            if not (given.isascii() and given.isdigit()):  # `-1` would read until the client hangs up
                raise FaultError("Content-Length must be a number of bytes")
            length = int(given)
            if length > MAX_BODY:
                raise FaultError(f"body larger than {MAX_BODY} bytes")
            raw = self.rfile.read(length) if length else b""
            try:
                return decode_json_body(raw or b"{}")  # too deep, huge numbers, NaN, NUL: said, not crashed on
            except BodyRejected as error:
                raise FaultError(str(error)) from None

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
            except (TypeError, KeyError, AttributeError) as error:  # a field of the wrong JSON type
                self._reply(400, {"error": f"a field has the wrong type: {error}"})

    return ControlHandler
