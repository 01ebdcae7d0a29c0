"""MetricsServer over real HTTP: every answer, error or not, leaves a kept-alive connection usable."""

from __future__ import annotations

import http.client
import logging

import pytest
from exporters_nvml_support import wait_until

from vigil.exporters.metrics_http import MetricsServer

PAGE = b"# TYPE vigil_node_gpus_visible gauge\nvigil_node_gpus_visible{node=\"node-1\"} 8\n"


def body(query: dict[str, str]) -> bytes:
    """A one-node single-port fleet: node-1 answers, node-2 is down, anything else is unknown."""
    node = query.get("node")
    if node == "node-2":
        raise ConnectionAbortedError("node-2 is down (simulated)")
    if node == "boom":
        raise RuntimeError("a bug in the collector")
    if node != "node-1":
        raise LookupError(f"unknown or missing node {node!r}: use /metrics?node=node-1")
    return PAGE


@pytest.fixture
def server():
    srv = MetricsServer("127.0.0.1", 0, body)
    yield srv
    srv.close()


def get(conn: http.client.HTTPConnection, path: str) -> tuple[int, bytes, http.client.HTTPResponse]:
    conn.request("GET", path)
    response = conn.getresponse()
    return response.status, response.read(), response


@pytest.mark.parametrize("path,status,reason", [
    ("/metrics?node=node-9", 404, b"unknown or missing node 'node-9'"),
    ("/metrics", 404, b"unknown or missing node None"),
    ("/nothing-here", 404, b"not found: try /metrics"),
    ("/metrics?node=node-2", 503, b"node-2 is down"),
])
def test_an_error_answer_then_a_scrape_on_the_same_kept_alive_connection(server, capfd, caplog, path, status, reason):
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
    try:
        code, data, response = get(conn, path)
        assert code == status and reason in data and not response.will_close
        sock = conn.sock
        code, data, _ = get(conn, "/metrics?node=node-1")
        assert code == 200 and data == PAGE
        assert conn.sock is sock  # the same TCP connection answered both
    finally:
        conn.close()
    assert "Traceback" not in capfd.readouterr().err
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


def test_a_failing_page_source_is_a_logged_500_and_the_connection_stays_usable(server, capfd, caplog):
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
    try:
        code, data, _ = get(conn, "/metrics?node=boom")
        assert code == 500 and b"internal error" in data and b"RuntimeError" not in data
        assert get(conn, "/metrics?node=node-1")[:2] == (200, PAGE)
    finally:
        conn.close()
    assert "Traceback" not in capfd.readouterr().err
    assert any("a bug in the collector" in str(r.exc_info[1]) for r in caplog.records if r.exc_info)


def test_a_scraper_hanging_up_mid_answer_is_not_logged(capfd, caplog):
    big = b"x" * (8 << 20)  # larger than the socket buffers: the write is still going when the client leaves
    srv = MetricsServer("127.0.0.1", 0, lambda _query: big)
    try:
        conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=5)
        conn.request("GET", "/metrics")
        response = conn.getresponse()
        response.read(1024)
        conn.sock.close()
        conn.close()
        wait_until(lambda: not srv.httpd.connections)  # the handler has met the hang-up and finished
        # the server is still fine for the next scraper
        conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=5)
        assert get(conn, "/metrics")[0] == 200
        conn.close()
    finally:
        srv.close()
    assert "Traceback" not in capfd.readouterr().err
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
