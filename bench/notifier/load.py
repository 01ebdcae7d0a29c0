"""A closed-loop HTTP load generator: C threads, each with one keep-alive connection (stdlib
`http.client`, the cheapest client Python has), posting pre-encoded JSON bodies as fast as answers come.

Per request it records the latency; per run the wall time and the CPU the generator itself used, so
the report can say how much of a small machine the client took from the server.
"""

from __future__ import annotations

import http.client
import itertools
import json
import threading
import time
from dataclasses import dataclass
from urllib.parse import urlsplit


@dataclass
class LoadResult:
    latencies: list[float]
    seconds: float
    client_cpu_s: float
    errors: int

    @property
    def rate(self) -> float:
        return len(self.latencies) / self.seconds if self.seconds else 0.0

    def quantile_ms(self, q: float) -> float:
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000 if ordered else float("nan")


def encode(bodies: list) -> list[bytes]:
    return [json.dumps(body).encode() for body in bodies]


def post_all(url: str, bodies: list[bytes], connections: int, headers: dict | None = None,
             stop: threading.Event | None = None) -> LoadResult:
    """POST every body of `bodies` to `url` over `connections` concurrent keep-alive connections.

    `stop` (set by another thread) ends the run early: the remaining bodies are not sent.
    """
    parts = urlsplit(url)
    send_headers = {"Content-Type": "application/json", **(headers or {})}
    counter = itertools.count()
    results: list[list[float]] = [[] for _ in range(connections)]
    errors = [0] * connections

    def client(slot: int) -> None:
        conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=60)
        mine = results[slot]
        try:
            while stop is None or not stop.is_set():
                index = next(counter)  # atomic under the GIL
                if index >= len(bodies):
                    return
                started = time.perf_counter()
                conn.request("POST", parts.path, body=bodies[index], headers=send_headers)
                response = conn.getresponse()
                response.read()
                mine.append(time.perf_counter() - started)
                if response.status >= 300:
                    errors[slot] += 1
        finally:
            conn.close()

    threads = [threading.Thread(target=client, args=(slot,)) for slot in range(connections)]
    cpu_before, started = time.process_time(), time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    seconds = time.perf_counter() - started
    return LoadResult([t for r in results for t in r], seconds, time.process_time() - cpu_before, sum(errors))
