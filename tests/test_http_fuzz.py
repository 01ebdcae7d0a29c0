"""The project's other HTTP servers under generated input, as `test_notifier_fuzz.py` puts the notifier:
the simulator's chaos API and the AIOps service (`/api/v1/ask`, `/metrics`, `/healthz`) have no OpenAPI
document for schemathesis, so hypothesis writes the requests itself: any method and path, JSON bodies of
any shape (wrong types, huge integers, deep nesting, NUL and lone surrogates written as escapes), raw
bytes that are no JSON, and missing, negative or non-numeric Content-Lengths. Every request must get an
answer (never a closed connection) and none a 5xx."""

from __future__ import annotations

import json
import socket
import threading

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry

from vigil.common.ports import free_port, free_ports
from vigil.aiops.baseline.service import BaselineService, ServiceConfig, make_http_server
from vigil.aiops.baseline.train import TrainSettings
from vigil.exporters.fleet_server import FleetServer
from vigil.exporters.sim.fleet import SimulatedFleet

EXAMPLES = 300  # per server: about 10 s on a 2-core machine

scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False),
                    st.integers(min_value=10 ** 300, max_value=10 ** 320),  # past what int() reads quietly
                    st.text(max_size=30), st.sampled_from(["xid79", "node-1", "\x00", "\ud800", "P1", "ecc-dbe"]))
json_values = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.sampled_from(
        ["fault", "node", "gpu", "count", "question", "q", "time", "x"]) | st.text(max_size=8), inner, max_size=4)),
    max_leaves=12)


@st.composite
def bodies(draw) -> bytes:
    kind = draw(st.sampled_from(["json", "deep", "bytes", "empty"]))
    if kind == "json":
        return json.dumps(draw(json_values)).encode()
    if kind == "deep":
        depth = draw(st.integers(50, 5000))
        return b"[" * depth + b"]" * depth
    if kind == "bytes":
        return draw(st.binary(max_size=200))
    return b""


@st.composite
def raw_requests(draw, paths: list[str]) -> bytes:
    method = draw(st.sampled_from(["GET", "POST", "POST", "POST", "PUT", "DELETE", "HEAD"]))
    path = draw(st.sampled_from(paths) | st.text(alphabet="/abcdefghijklmnopqrstuvwxyz0123456789?=&%._-",
                                                 min_size=1, max_size=40).map(lambda p: "/" + p))
    body = draw(bodies())
    length = draw(st.sampled_from(["right", "right", "missing", "-1", "abc", "²", "0"]))
    headers = [f"{method} {path} HTTP/1.1", "Host: fuzz", "Content-Type: application/json", "Connection: close"]
    if length == "right":
        headers.append(f"Content-Length: {len(body)}")
    elif length != "missing":
        headers.append(f"Content-Length: {length}")
    return "\r\n".join(headers).encode() + b"\r\n\r\n" + body


def answer_of(port: int, request: bytes) -> bytes:
    """The status line the server answered `request` with (the connection closed after it)."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as conn:
        conn.sendall(request)
        try:
            conn.shutdown(socket.SHUT_WR)  # all of the body there is: a handler waiting for more sees EOF
        except OSError:
            pass
        received = b""
        while chunk := conn.recv(65536):
            received += chunk
            if b"\r\n" in received:
                break
    return received.split(b"\r\n", 1)[0]


def no_server_error(port: int, paths: list[str], readiness: str | None = None) -> list[int]:
    """Each generated request answered below 500 (but `readiness`'s 503: the probe saying "not ready")."""
    seen = []

    @given(request=raw_requests(paths))
    @settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    def each(request):
        status_line = answer_of(port, request)
        assert status_line.startswith(b"HTTP/1."), (request[:300], status_line)
        status = int(status_line.split()[1])
        probe = readiness is not None and request.split(b" ", 2)[1].split(b"?")[0] == readiness.encode()
        assert status < 500 or (probe and status == 503), (request[:300], status_line)
        seen.append(status)

    each()
    return seen


def test_the_chaos_api_answers_any_request_without_a_server_error():
    base = free_ports(4)
    server = FleetServer(SimulatedFleet(3, 4), port=base, control_port=base + 3, interval=0.05)
    server.start()
    try:
        seen = no_server_error(base + 3, ["/chaos", "/chaos/inject", "/chaos/clear", "/healthz"])
    finally:
        server.stop()
    assert {200, 400, 404} <= set(seen), sorted(set(seen))  # accepted, refused and unknown were all tried


def test_the_aiops_service_answers_any_request_without_a_server_error(tmp_path):
    service = BaselineService(ServiceConfig(tmp_path, TrainSettings(), 3600.0, "http://127.0.0.1:9", ("up",)))
    server = make_http_server("127.0.0.1", free_port(), CollectorRegistry(), service)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        seen = no_server_error(server.server_address[1], ["/api/v1/ask", "/metrics", "/healthz"],
                               readiness="/healthz")  # 503 until a model is loaded: a probe's answer
    finally:
        server.shutdown()
    assert {400, 404} <= set(seen) and any(s in seen for s in (200, 422, 502, 503)), sorted(set(seen))
