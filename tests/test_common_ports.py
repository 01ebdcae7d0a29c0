"""The one free-port probe that tests, benches and the stack share (vigil.common.ports)."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from vigil.common.ports import free_port, free_port_base, free_ports, port_bands, port_is_free


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
    except (OSError, RuntimeError):  # RuntimeError: no port of the band could be bound on ::1
        pytest.skip("no IPv6 loopback on this machine")
    assert port_is_free(port, "::1")


def ephemeral_low() -> int:
    """The start of the kernel's ephemeral range, or where the bands end on a host whose range starts
    too low to leave them room (they reach into it there)."""
    return max(int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0]), 16000)


def test_a_port_base_has_its_whole_span_free_below_the_ephemeral_range():
    base = free_port_base(span=20)
    assert 10000 <= base and base + 20 <= ephemeral_low() and base % 100 == 0
    assert all(port_is_free(base + i) for i in range(20))


def test_single_ports_lie_below_the_ephemeral_range_and_outside_every_stack_span():
    """A released port inside the ephemeral range can become any process's outgoing source port before
    its server starts; a single port inside the spans' band could land in a span a stack is taking."""
    spans, singles = port_bands()
    assert spans.stop == singles.start and singles.stop <= ephemeral_low()
    picks = [free_port() for _ in range(50)] + [free_ports(3) + 2 for _ in range(20)]
    assert all(singles.start <= port < singles.stop for port in picks)
    assert len(set(picks)) > 40, "picks are random, so parallel workers rarely take the same one"
    assert all(spans.start <= free_port_base(span=10) < spans.stop - 10 for _ in range(20))
