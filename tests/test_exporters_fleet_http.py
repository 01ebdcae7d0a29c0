"""The fleet's event-loop HTTP server answers malformed requests as http.server does: 400, no traceback."""

from __future__ import annotations

import socket

import pytest

from vigil.exporters.fleet_http import MetricsHost


@pytest.fixture
def listener():
    host = MetricsHost(render_workers=1)
    try:
        yield host.listen("127.0.0.1", 0, lambda _query: b"up 1\n")
    finally:
        host.close()


def _exchange(port: int, request: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=5) as conn:
        conn.sendall(request)
        conn.shutdown(socket.SHUT_WR)
        reply = b""
        while chunk := conn.recv(4096):
            reply += chunk
    return reply


@pytest.mark.parametrize("length", [b"abc", b"-5", b"99999999999"])
def test_a_bad_content_length_gets_400(listener, length: bytes) -> None:
    reply = _exchange(listener.port, b"GET /metrics HTTP/1.1\r\nContent-Length: " + length + b"\r\n\r\n")
    assert reply.startswith(b"HTTP/1.1 400 "), reply
    # the listener still serves the next client
    assert _exchange(listener.port, b"GET /metrics HTTP/1.1\r\nConnection: close\r\n\r\n").endswith(b"\r\n\r\nup 1\n")
