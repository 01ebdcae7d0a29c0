"""A small HTTP server that answers `GET /metrics` with pre-rendered exposition text.

The GPU collector renders its snapshot once per collection cycle (see `NvmlCollector.exposition`),
so a scrape costs a dictionary lookup and a socket write instead of rebuilding ~1,000 samples. One
server can front many nodes: `body(query)` receives the parsed query string (`/metrics?node=node-17`
in the fleet's single-port mode) and returns the bytes, or raises `LookupError` (404) or
`ConnectionAbortedError` (503, a simulated node that is down). Every answer leaves a kept-alive
connection usable; any other exception is logged and answered 500. A scraper that hangs up mid-answer
(a scrape timeout) is normal and not logged.
"""

from __future__ import annotations

import gzip
import logging
import socket
import threading
from http.server import BaseHTTPRequestHandler
from typing import Callable, NamedTuple
from urllib.parse import parse_qs, urlsplit

from vigil.common.http_server import HangupTolerantServer, http_server

_log = logging.getLogger(__name__)
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
Body = Callable[[dict[str, str]], bytes]


class _TrackingHTTPServer(HangupTolerantServer):
    """Remembers its open connections so `close()` can cut them (a scraper that hangs up mid-answer is
    a debug line: `HangupTolerantServer`).

    Prometheus keeps scrape connections alive: closing only the listening socket would leave the old
    connection answering, and a simulated `node-down` would never be seen as down.
    """

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.connections: set[socket.socket] = set()
        self.connections_lock = threading.Lock()

    def process_request(self, request, client_address) -> None:
        with self.connections_lock:
            self.connections.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request) -> None:
        with self.connections_lock:
            self.connections.discard(request)
        super().shutdown_request(request)

    def cut_connections(self) -> None:
        with self.connections_lock:
            open_now = list(self.connections)
        for conn in open_now:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


class MetricsServer:
    """Serves `/metrics` (and `/` with a pointer to it) on host:port in a daemon thread."""

    def __init__(self, host: str, port: int, body: Body) -> None:
        self.httpd = http_server(host, port, _handler(body), _TrackingHTTPServer)
        self.httpd.daemon_threads = True
        self._thread = threading.Thread(target=self.httpd.serve_forever, name=f"vigil-metrics-{port}", daemon=True)
        self._thread.start()

    @property
    def port(self) -> int:
        return self.httpd.server_address[1]

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.httpd.cut_connections()


def gzip_cache() -> Callable[[str, bytes], bytes]:
    """gzip of a page, computed once per rendered page (the collector returns the same bytes object
    until its next cycle), per node of a single-port fleet."""
    cache: dict[str, tuple[bytes, bytes]] = {}

    def compressed(key: str, data: bytes) -> bytes:
        hit = cache.get(key)
        if hit is None or hit[0] is not data:
            hit = (data, gzip.compress(data, compresslevel=1))
            cache[key] = hit
        return hit[1]

    return compressed


class Reply(NamedTuple):
    status: int
    data: bytes
    content_type: str = "text/plain; charset=utf-8"
    encoding: str | None = None


def answer(body: Body, path: str, accepts_gzip: bool, compressed: Callable[[str, bytes], bytes]) -> Reply:
    """The reply to `GET path`, whatever server carries it (this one, or the fleet's event loop)."""
    url = urlsplit(path)
    if url.path == "/":
        return Reply(200, b"vigil GPU exporter: see /metrics\n")
    if url.path != "/metrics":
        return Reply(404, b"not found: try /metrics\n")
    query = {k: v[-1] for k, v in parse_qs(url.query).items()}
    try:
        data = body(query)
    except LookupError as error:  # e.g. an unknown ?node=
        return Reply(404, f"{error.args[0] if error.args else error}\n".encode())
    except ConnectionAbortedError as error:  # a simulated node that is down
        return Reply(503, f"{error}\n".encode())
    except Exception:  # a bug in the page's source: say so and keep the connection usable
        _log.exception("rendering %s failed", path)
        return Reply(500, b"internal error while rendering the metrics page (see the exporter's log)\n")
    if accepts_gzip:  # Prometheus asks for gzip
        return Reply(200, compressed(query.get("node", ""), data), CONTENT_TYPE, "gzip")
    return Reply(200, data, CONTENT_TYPE)


def _handler(body: Body) -> type[BaseHTTPRequestHandler]:
    compressed = gzip_cache()

    class MetricsHandler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as Prometheus scrapes
        # headers and body go out in two writes; with Nagle on, a small (gzipped) body then waits for
        # the client's delayed ACK: 40 ms per scrape on a keep-alive connection
        disable_nagle_algorithm = True

        def log_message(self, format: str, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            reply = answer(body, self.path, "gzip" in self.headers.get("Accept-Encoding", ""), compressed)
            self.send_response(reply.status)
            self.send_header("Content-Type", reply.content_type)
            if reply.encoding:
                self.send_header("Content-Encoding", reply.encoding)
            self.send_header("Content-Length", str(len(reply.data)))
            self.end_headers()
            self.wfile.write(reply.data)

    return MetricsHandler
