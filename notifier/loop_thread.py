"""A background loop in a daemon thread that can be woken early and stopped: the delivery worker's
and the escalation engine's shared mechanics (start, stop, wake, the waits between passes)."""

from __future__ import annotations

import threading
from typing import Callable


class LoopThread:
    """Runs `body` in a daemon thread named `name`; `body` loops until `stopping` and rests between
    passes with `idle` (cut short by `wake` or `stop`) or `sleep` (cut short by `stop` only)."""

    def __init__(self, name: str, body: Callable[[], None]):
        self._name = name
        self._body = body
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._body, name=self._name, daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def wake(self) -> None:
        self._wake.set()

    @property
    def stopping(self) -> bool:
        return self._stop.is_set()

    def idle(self, seconds: float) -> None:
        """Wait up to `seconds`, less if woken (a wake during the pass before ends it at once)."""
        if seconds > 0:
            self._wake.wait(seconds)
        self._wake.clear()

    def sleep(self, seconds: float) -> None:
        """Wait `seconds` whatever wakes come, unless stopped."""
        self._stop.wait(seconds)
