"""Helpers shared by the GPU exporter tests (test_exporters_nvml_*, test_exporters_fleet_*)."""

from __future__ import annotations

import socket
import time

import requests


def free_ports(count: int) -> int:
    """A base port with `count` consecutive free ports on 127.0.0.1."""
    for _ in range(50):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            base = probe.getsockname()[1]
        if base + count >= 65535:
            continue
        held = []
        try:
            for port in range(base, base + count):
                s = socket.socket()
                held.append(s)
                s.bind(("127.0.0.1", port))
            return base
        except OSError:
            continue
        finally:
            for s in held:
                s.close()
    raise RuntimeError("no free port range")


def wait_until(predicate, timeout: float = 5.0, step: float = 0.05) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "condition not reached in time"
        time.sleep(step)


def answers(url: str) -> bool:
    try:
        return requests.get(url, timeout=1).ok
    except requests.ConnectionError:
        return False
