"""Standard-library HTTP servers that listen where HOST:PORT says, an IPv6 address (`::1`) included.

`http.server` servers are IPv4-only by default (their `address_family` is a class attribute), so a
`--listen [::1]:PORT` would fail with "Address family for hostname not supported".
"""

from __future__ import annotations

import socket
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TypeVar

Server = TypeVar("Server", bound=ThreadingHTTPServer)


def http_server(host: str, port: int, handler: type[BaseHTTPRequestHandler],
                server_class: type[Server] = ThreadingHTTPServer) -> Server:
    """A `server_class` bound to `host:port`, over IPv6 when `host` is an IPv6 address."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    if server_class.address_family != family:
        server_class = type(server_class.__name__, (server_class,), {"address_family": family})
    return server_class((host, port), handler)
