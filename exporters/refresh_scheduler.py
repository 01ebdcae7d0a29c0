"""Refreshes many collectors from a few worker threads, spread evenly over the interval.

A fleet of 1,250 simulated nodes cannot afford a thread per node waking at the same instant: the
scheduler starts node *i*'s refresh at `i / n` of each interval on a small pool, and skips a node whose
previous refresh has not finished, so a node stuck in NVML ties up one worker and never piles up work.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Protocol, Sequence


class Refreshable(Protocol):
    def refresh(self) -> None: ...


class RefreshScheduler:
    """Calls `refresh()` of every collector once per `interval` seconds on `workers` threads."""

    def __init__(self, collectors: Sequence[Refreshable], interval: float, workers: int = 8) -> None:
        self.collectors = list(collectors)
        self.interval = interval
        self._pool = ThreadPoolExecutor(max_workers=max(1, min(workers, len(self.collectors))),
                                        thread_name_prefix="vigil-refresh")
        self._busy: set[int] = set()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="vigil-refresh-scheduler", daemon=True)
        self.skipped = 0  # refreshes skipped because the previous one was still running

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=self.interval + 1)
        self._pool.shutdown(wait=False, cancel_futures=True)

    def _run(self) -> None:
        n = len(self.collectors)
        cycle_start = time.monotonic()
        while not self._stop.is_set():
            cycle_start += self.interval
            for i, collector in enumerate(self.collectors):
                delay = cycle_start + self.interval * i / n - time.monotonic() - self.interval
                if delay > 0 and self._stop.wait(delay):
                    return
                self._submit(i, collector)
            remaining = cycle_start - time.monotonic()
            if remaining > 0 and self._stop.wait(remaining):
                return
            if remaining < -self.interval:  # fell behind by a whole cycle: do not try to catch up
                cycle_start = time.monotonic()

    def _submit(self, i: int, collector: Refreshable) -> None:
        with self._lock:
            if i in self._busy:
                self.skipped += 1
                return
            self._busy.add(i)
        try:
            self._pool.submit(self._refresh, i, collector)
        except RuntimeError:  # pool shut down while stopping
            with self._lock:
                self._busy.discard(i)

    def _refresh(self, i: int, collector: Refreshable) -> None:
        try:
            collector.refresh()
        finally:
            with self._lock:
                self._busy.discard(i)
