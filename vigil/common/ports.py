"""Free loopback ports: one probe for the stack's port checks, the tests and the benches."""

from __future__ import annotations

import random
import socket
from pathlib import Path


def free_port(host: str = "127.0.0.1") -> int:
    """A port nothing listens on now: the kernel's pick for port 0, released at once."""
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def port_is_free(port: int, host: str = "127.0.0.1") -> bool:
    """True if a server could listen on the port now (servers set SO_REUSEADDR, so TIME_WAIT is fine)."""
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def free_port_base(span: int = 100) -> int:
    """A base port with `span` free ports after it (random, so parallel runs rarely collide), below the
    kernel's ephemeral range: a stack's components open dozens of connections among themselves, and a
    port range inside the ephemeral one has been seen to find its chaos port taken as a source port."""
    rng = random.Random()
    try:
        low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        low = 32768
    top = max(low - span, 12000)
    for _ in range(200):
        base = rng.randrange(10000, top, 100)
        if all(port_is_free(base + i) for i in range(span)):
            return base
    raise RuntimeError("no free port range found")
