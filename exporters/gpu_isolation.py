"""Keep one stuck GPU from freezing the collection of the others.

An NVML call on a wedged GPU can block for minutes, and Python cannot interrupt it. `StallGuard` runs
each GPU's read on a worker thread and stops waiting after `timeout` seconds: the GPU is reported as
stalled, the worker (still blocked inside NVML) is abandoned, and the other GPUs are read on a fresh
worker. The stalled GPU is read again only once its stuck call has returned, so a hang costs one
thread, never one per cycle.
"""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from typing import Callable


class StallGuard:
    """Runs reads with a time limit; `run` returns False when the read is (still) stuck."""

    def __init__(self, timeout: float, name: str = "vigil-gpu-read") -> None:
        self.timeout = timeout
        self._name = name
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix=name)
        self._stuck: dict[int, Future] = {}

    def stalled(self, key: int) -> bool:
        """Whether the last read of `key` has not returned yet."""
        future = self._stuck.get(key)
        if future is not None and future.done():
            del self._stuck[key]  # the stuck call came back: read it normally from now on
            return False
        return future is not None

    def run(self, key: int, read: Callable[[], None]) -> bool:
        """Run `read()`; True when it finished (its exceptions propagate), False when it timed out."""
        if self.stalled(key):
            return False
        future = self._worker.submit(read)
        try:
            future.result(timeout=self.timeout)
        except TimeoutError:
            self._stuck[key] = future
            self._worker.shutdown(wait=False)  # leave the blocked thread behind
            self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix=self._name)
            return False
        return True

    def close(self) -> None:
        self._worker.shutdown(wait=False, cancel_futures=True)
