"""Slow and hostile clients against a real `vigil notifier serve`: 1,000 connections held open (half
with half a header, half with full headers and a body that never ends) from ten addresses do not slow
Alertmanager's posts from its own, each is closed once its deadline passes (a 408 answer where the
headers never came), and one address holding more than its share is refused with 429 beyond it."""

from __future__ import annotations

import os
import resource
import socket
import statistics
import subprocess
import time

import pytest
import requests

from stack_support import VIGIL
from test_notifier_support import AUTH, TOKEN, alert, free_port, payload, wait_for

pytestmark = pytest.mark.e2e

HOOK = "/api/v1/alerts/alertmanager"
DEADLINE_S, CAP = 6, 120
ONCALL = "people:\n  ana: {contacts: {phone: {inbox: true, kind: phone}}}\npolicies:\n  p: {tiers: [{notify: [{person: ana}]}]}\ndefault_policy: p\n"


@pytest.fixture
def notifier(tmp_path):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, 8192)), hard))  # this test's 1,100 sockets
    port = free_port()
    token, oncall = tmp_path / "token", tmp_path / "oncall.yaml"
    token.write_text(TOKEN + "\n")
    os.chmod(token, 0o600)
    oncall.write_text(ONCALL)
    process = subprocess.Popen(
        [VIGIL, "notifier", "serve", "--listen", f"127.0.0.1:{port}", "--db", f"sqlite:///{tmp_path / 'n.db'}",
         "--token-file", str(token), "--oncall-config", str(oncall), "--log-level", "warning",
         "--header-timeout", f"{DEADLINE_S}s", "--body-timeout", f"{DEADLINE_S}s",
         "--max-connections-per-client", str(CAP)],
        stdout=subprocess.DEVNULL, stderr=open(tmp_path / "notifier.log", "w"))
    url = f"http://127.0.0.1:{port}"

    def healthy() -> bool:
        assert process.poll() is None, (tmp_path / "notifier.log").read_text()[-2000:]
        try:
            return requests.get(url + "/healthz", timeout=1).status_code == 200
        except requests.ConnectionError:
            return False
    wait_for(healthy, timeout=30)
    yield port
    process.terminate()
    process.wait(15)
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def connect(port: int, source: str) -> socket.socket:
    held = socket.socket()
    held.bind((source, 0))
    held.connect(("127.0.0.1", port))
    return held


def post_latencies(port: int, count: int, first: int) -> list[float]:
    """Alertmanager's posts from 127.0.0.1: each answered 200; their latencies."""
    taken = []
    with requests.Session() as session:
        for n in range(first, first + count):
            body = payload(alert(f"fp-{n}", gpu=str(n)), group_key=f'{{}}:{{gpu="{n}"}}')
            began = time.monotonic()
            answer = session.post(f"http://127.0.0.1:{port}{HOOK}", json=body, headers=AUTH, timeout=DEADLINE_S / 2)
            taken.append(time.monotonic() - began)
            assert answer.status_code == 200, answer.text
    return taken


class Closings:
    """What the server wrote on each of some sockets before closing it, read as it happens."""

    def __init__(self, sockets: list[socket.socket]):
        self.sockets = sockets
        self.received = [b""] * len(sockets)
        self.closed = [False] * len(sockets)
        for held in sockets:
            held.setblocking(False)

    def poll(self) -> int:
        """Read what arrived; how many the server has closed so far."""
        for n, held in enumerate(self.sockets):
            while not self.closed[n]:
                try:
                    chunk = held.recv(4096)
                except BlockingIOError:
                    break
                except ConnectionResetError:
                    chunk = b""
                if chunk:
                    self.received[n] += chunk
                else:
                    self.closed[n] = True
        return sum(self.closed)

    def answers(self) -> list[bytes]:
        return [answer for answer, closed in zip(self.received, self.closed) if closed]


def test_a_thousand_slow_connections_neither_slow_alertmanager_nor_stay_open(notifier):
    port = notifier
    before = post_latencies(port, 20, 0)
    half_headers, half_bodies = [], []
    opened = time.monotonic()
    for n in range(1000):
        held = connect(port, f"127.0.0.{2 + n % 10}")  # ten addresses, 100 connections each (under the cap)
        if n % 2:
            held.sendall(b"POST /api/v1/alerts/alertmanager HTTP/1.1\r\nHost: x\r\n")  # and never the rest
            half_headers.append(held)
        else:
            held.sendall(b"POST /api/v1/alerts/alertmanager HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "
                         + TOKEN.encode() + b"\r\nContent-Type: application/json\r\nContent-Length: 5000\r\n\r\n{\"ver")
            half_bodies.append(held)
    during = post_latencies(port, 20, 100)
    assert time.monotonic() - opened < DEADLINE_S, "the test was too slow to post while the connections were held"
    print(f"\nwebhook latency p50 {statistics.median(before) * 1000:.1f} ms before, "
          f"{statistics.median(during) * 1000:.1f} ms while 1,000 slow connections were held")
    assert max(during) < DEADLINE_S / 2

    # one more address taking more than its share: the connections beyond the cap are refused at once
    crowd = [connect(port, "127.0.0.99") for _ in range(CAP + 10)]
    refused = Closings(crowd)
    wait_for(lambda: refused.poll() >= 10, timeout=5)
    assert refused.poll() == 10 and all(answer.startswith(b"HTTP/1.1 429 ") for answer in refused.answers())

    # after the deadline every slow connection is closed: those without headers told why
    slow = Closings(half_headers + half_bodies)
    wait_for(lambda: slow.poll() == len(slow.sockets), timeout=DEADLINE_S * 3)
    assert all(answer.startswith(b"HTTP/1.1 408 ") for answer in slow.received[:len(half_headers)])
    assert all(b" 200 " not in answer for answer in slow.received[len(half_headers):])  # the cut body was never taken
    for held in half_headers + half_bodies + crowd:
        held.close()
    # the addresses are not locked out afterwards
    assert post_latencies(port, 1, 200)
