"""The one free-port probe that tests, benches and the stack share (vigil.common.ports)."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from vigil.common.ports import free_port, free_port_base, port_is_free


def test_a_free_port_can_be_listened_on_and_a_held_one_is_not_free():
    port = free_port()
    with socket.socket() as server:
        server.bind(("127.0.0.1", port))
        server.listen()
        assert not port_is_free(port)
    assert port_is_free(port)


def test_a_free_port_on_ipv6_loopback():
    try:
        port = free_port("::1")
    except OSError:
        pytest.skip("no IPv6 loopback on this machine")
    assert port_is_free(port, "::1")


def test_a_port_base_has_its_whole_span_free_below_the_ephemeral_range():
    low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    base = free_port_base(span=20)
    assert 10000 <= base and base + 20 <= max(low, 12000)
    assert all(port_is_free(base + i) for i in range(20))
