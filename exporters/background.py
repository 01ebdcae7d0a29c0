"""A snapshot that is refreshed in a background thread, never on the caller's clock.

Exporters that read something slow (a dcgm-exporter page over HTTP, `smartctl` on every disk, the job
sources) must not make Prometheus' scrape of our `/metrics` wait for it for long. `BackgroundSnapshot.get()`
starts one refresh in a daemon thread when the latest result is older than `max_age`, waits at most
`wait` seconds for a refresh in flight (`first_wait` before the very first result exists), and returns
the latest completed result. A quick source is therefore served fresh (the scrape waits the few
milliseconds the refresh takes, instead of getting the values of one scrape ago); a slow or hung source
costs a scrape at most `wait` seconds and the previous result is served.

By default refreshes are driven by scrapes rather than by a free-running loop: nothing polls hardware
while nobody is looking, and there is no thread to stop when a collector is dropped (tests create many).
A long-running exporter whose scrapes must never wait at all (the DCGM backend of `vigil exporter gpu`)
calls `start()` instead: a loop then refreshes every `max_age` seconds, as the NVML collector's does,
and `get()` only hands out the latest result; a hung source stalls the loop, never a scrape.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Callable, Generic, TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class Snapshot(Generic[T]):
    """The outcome of one refresh: a value, or the error that prevented it, and when it completed."""

    value: T | None
    error: str | None
    completed_at: float  # time.monotonic()
    duration_s: float

    @property
    def ok(self) -> bool:
        return self.error is None


class BackgroundSnapshot(Generic[T]):
    """Keeps the latest result of `fetch()`; refreshes it in the background when older than `max_age`."""

    def __init__(self, fetch: Callable[[], T], max_age: float, wait: float = 0.0, first_wait: float | None = None):
        first_wait = wait if first_wait is None else first_wait
        if max_age < 0 or wait < 0 or first_wait < 0:
            raise ValueError("max_age, wait and first_wait must be >= 0")
        self._fetch = fetch
        self._max_age = max_age
        self._wait = wait
        self._first_wait = first_wait
        self._lock = threading.Lock()
        self._latest: Snapshot[T] | None = None
        self._running: threading.Thread | None = None
        self._done = threading.Event()
        self._loop: threading.Thread | None = None
        self._stopping = threading.Event()

    def get(self) -> Snapshot[T] | None:
        """The latest completed snapshot (None before the first one completes)."""
        with self._lock:
            latest = self._latest
            if self._loop is not None:  # the loop refreshes: never start or wait for a refresh here
                return latest
            stale = latest is None or time.monotonic() - latest.completed_at >= self._max_age
            if stale and self._running is None:
                self._done.clear()
                self._running = threading.Thread(target=self._refresh, name="vigil-refresh", daemon=True)
                self._running.start()
            in_flight = self._running is not None
        wait = self._first_wait if latest is None else self._wait
        if in_flight and wait > 0:
            self._done.wait(wait)
            with self._lock:
                latest = self._latest
        return latest

    def start(self) -> None:
        """Refresh now and then every `max_age` seconds (after each refresh ends) in a daemon thread,
        until `stop()`. Waits at most `first_wait` for the first result, so the first scrape has data."""
        if self._max_age <= 0:
            raise ValueError("a refresh loop needs max_age > 0")
        with self._lock:
            if self._loop is not None:
                return
            self._done.clear()
            self._loop = threading.Thread(target=self._run_loop, name="vigil-refresh-loop", daemon=True)
            self._loop.start()
        self._done.wait(self._first_wait)

    def stop(self, timeout: float = 1.0) -> None:
        """End the loop of `start()`; a refresh stuck in its source is abandoned after `timeout` seconds."""
        self._stopping.set()
        if self._loop is not None:
            self._loop.join(timeout)

    def _run_loop(self) -> None:
        while not self._stopping.is_set():
            self._refresh(track=False)
            self._stopping.wait(self._max_age)

    def refresh_now(self) -> Snapshot[T]:
        """Run one refresh in the calling thread (CLI one-shot use and tests)."""
        self._refresh(track=False)
        assert self._latest is not None
        return self._latest

    def _refresh(self, track: bool = True) -> None:
        started = time.monotonic()
        try:
            value, error = self._fetch(), None
        except Exception as exc:  # noqa: BLE001 - any failure of the source becomes "source down"
            value, error = None, f"{type(exc).__name__}: {exc}"
        now = time.monotonic()
        with self._lock:
            self._latest = Snapshot(value, error, now, now - started)
            if track:
                self._running = None
        self._done.set()
