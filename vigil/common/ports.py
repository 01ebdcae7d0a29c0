"""Free loopback ports: one probe for the stack's port checks, the tests and the benches.

Every pick lies below the kernel's ephemeral range. A port the kernel hands out for `bind(port 0)` and
that is then released lies inside that range, where any process's next outgoing connection may take
it as its source port before the server that was meant to listen on it starts (a clean-clone CI run
saw "address already in use" on a test notifier's port that way). Below the range only another pick
can take it. Single ports and 100-port spans come from two separate bands, so a test's single port
never lands inside the span a stack is about to take."""

from __future__ import annotations

import random
import socket
from pathlib import Path

LOWEST = 10000


def port_is_free(port: int, host: str = "127.0.0.1") -> bool:
    """True if a server could listen on the port now (servers set SO_REUSEADDR, so TIME_WAIT is fine)."""
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def port_bands() -> tuple[range, range]:
    """(the band spans start in, the band single ports come from), both below the ephemeral range; on a
    host whose ephemeral range starts too low to leave room, the bands reach into it."""
    try:
        low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        low = 32768
    top = max(low, LOWEST + 6000)
    split = LOWEST + (top - LOWEST) * 2 // 300 * 100  # two thirds for spans: 150 bases, 7,600 single ports
    return range(LOWEST, split), range(split, top)


def free_ports(count: int, host: str = "127.0.0.1") -> int:
    """The first of `count` consecutive ports nothing listens on now, picked at random in the band for
    single ports (random, so parallel test workers rarely pick the same one)."""
    singles = port_bands()[1]
    rng = random.Random()
    for _ in range(200):
        base = rng.randrange(singles.start, singles.stop - count + 1)
        if all(port_is_free(base + i, host) for i in range(count)):
            return base
    raise RuntimeError(f"no {count} free consecutive ports found on {host}")


def free_port(host: str = "127.0.0.1") -> int:
    """A port nothing listens on now."""
    return free_ports(1, host)


def free_port_base(span: int = 100) -> int:
    """A base port with `span` free ports after it, for a whole stack's components (a multiple of 100,
    random, so parallel runs rarely collide)."""
    spans = port_bands()[0]
    rng = random.Random()
    for _ in range(200):
        base = rng.randrange(spans.start, max(spans.stop - span, spans.start + 1), 100)
        if all(port_is_free(base + i) for i in range(span)):
            return base
    raise RuntimeError("no free port range found")
