"""Standard-library HTTP servers that listen where HOST:PORT says, an IPv6 address (`::1`) included,
and the handler base of the ones that serve GET and POST only.

`http.server` servers are IPv4-only by default (their `address_family` is a class attribute), so a
`--listen [::1]:PORT` would fail with "Address family for hostname not supported". Their handlers
answer a method they have no `do_` for with 501, a server error; `GetAndPostHandler` answers the other
standard methods with 405 and `Allow`, as a request the client got wrong. `HangupTolerantServer` logs
a client that hung up mid-answer at debug level instead of printing a traceback.
"""

from __future__ import annotations

import json
import logging
import socket
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TypeVar

Server = TypeVar("Server", bound=ThreadingHTTPServer)
log = logging.getLogger(__name__)


def http_server(host: str, port: int, handler: type[BaseHTTPRequestHandler],
                server_class: type[Server] = ThreadingHTTPServer) -> Server:
    """A `server_class` bound to `host:port`, over IPv6 when `host` is an IPv6 address."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    if server_class.address_family != family:
        server_class = type(server_class.__name__, (server_class,), {"address_family": family})
    return server_class((host, port), handler)


class HangupTolerantServer(ThreadingHTTPServer):
    """A server for which a client hanging up before its answer is written (a health probe or scraper
    that timed out: `BrokenPipeError`, `ConnectionResetError`) is a debug line, not the traceback that
    socketserver prints on stderr for any exception of a handler; other exceptions still get one."""

    def handle_error(self, request, client_address) -> None:
        error = sys.exc_info()[1]
        if isinstance(error, ConnectionError):
            log.debug("%s hung up before the answer was sent (%s)", client_address[0], error.__class__.__name__)
            return
        super().handle_error(request, client_address)


class GetAndPostHandler(BaseHTTPRequestHandler):
    """A handler of GET and POST (its `do_GET`, `do_POST`): PUT, DELETE, PATCH, OPTIONS and HEAD get 405."""

    def _not_allowed(self) -> None:
        body = json.dumps({"error": f"method {self.command} is not allowed here: use GET or POST"}).encode()
        self.send_response(405)
        self.send_header("Allow", "GET, POST")
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    do_PUT = do_DELETE = do_PATCH = do_OPTIONS = do_HEAD = _not_allowed
