"""The AIOps service's HTTP server when a client hangs up before its answer: a debug line, no traceback.

During start-up training a health probe (the stack's waits half a second) can give up before `/healthz`
answers; writing the answer then fails with BrokenPipeError or ConnectionResetError, which socketserver
used to print as a traceback on stderr. Here the probe hangs up (a TCP reset) while the handler is held
inside `/healthz`, and the handler is let go only then.
"""

from __future__ import annotations

import logging
import socket
import struct
import threading
from http.server import BaseHTTPRequestHandler

import pytest
from prometheus_client import CollectorRegistry

from vigil.aiops.baseline.service import make_http_server
from vigil.common.http_server import HangupTolerantServer, http_server
from vigil.common.ports import free_port

WAIT_S = 10.0


class HeldService:
    """Stands in for BaselineService: `current()` (read by /healthz) waits until the test lets it go."""

    def __init__(self):
        self.entered, self.release = threading.Event(), threading.Event()

    def current(self):
        self.entered.set()
        assert self.release.wait(WAIT_S)
        return object()  # a model is loaded: /healthz would answer 200


class Seen(logging.Handler):
    """Sets `event` when a record whose message contains `text` is logged."""

    def __init__(self, text: str):
        super().__init__(logging.DEBUG)
        self.text, self.event, self.messages = text, threading.Event(), []

    def emit(self, record):
        self.messages.append(record.getMessage())
        if self.text in record.getMessage():
            self.event.set()


@pytest.fixture
def hangup_log():
    logger = logging.getLogger("vigil.common.http_server")
    seen, level = Seen("hung up before the answer was sent"), logger.level
    logger.addHandler(seen)
    logger.setLevel(logging.DEBUG)
    yield seen
    logger.removeHandler(seen)
    logger.setLevel(level)


def hang_up(sock: socket.socket) -> None:
    """Close with a reset (SO_LINGER 0), as a client that timed out and went away does, at once."""
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()


def test_a_probe_that_hangs_up_mid_healthz_is_a_debug_line_not_a_traceback(capfd, hangup_log):
    service = HeldService()
    server = make_http_server("127.0.0.1", free_port(), CollectorRegistry(), service)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        probe = socket.create_connection(server.server_address, timeout=WAIT_S)
        probe.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        assert service.entered.wait(WAIT_S)  # the request is read; the answer is not written yet
        hang_up(probe)
        service.release.set()
        assert hangup_log.event.wait(WAIT_S), hangup_log.messages
    finally:
        server.shutdown()
        server.server_close()
    err = capfd.readouterr().err
    assert "Traceback" not in err and "BrokenPipe" not in err and "ConnectionReset" not in err, err


def test_other_errors_of_a_handler_still_print_their_traceback(capfd):
    class Failing(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 (http.server's naming)
            raise RuntimeError("a bug in the handler")

    server = http_server("127.0.0.1", free_port(), Failing, HangupTolerantServer)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        with socket.create_connection(server.server_address, timeout=WAIT_S) as client:
            client.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            assert client.recv(1024) == b""  # the server closed the connection after handle_error
    finally:
        server.shutdown()
        server.server_close()
    err = capfd.readouterr().err
    assert "Traceback" in err and "RuntimeError: a bug in the handler" in err
