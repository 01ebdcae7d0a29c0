"""The refresh scheduler spreads refreshes over the interval and never piles up work on a stuck node."""

from __future__ import annotations

import threading
import time

from vigil.exporters.refresh_scheduler import RefreshScheduler


class Counting:
    def __init__(self, block: threading.Event | None = None) -> None:
        self.calls: list[float] = []
        self.block = block

    def refresh(self) -> None:
        self.calls.append(time.monotonic())
        if self.block is not None:
            self.block.wait(10)


def test_every_collector_is_refreshed_each_interval_and_a_stuck_one_is_skipped() -> None:
    release = threading.Event()
    healthy = [Counting() for _ in range(4)]
    stuck = Counting(block=release)
    scheduler = RefreshScheduler([*healthy, stuck], interval=0.2, workers=2)
    scheduler.start()
    try:
        time.sleep(1.1)
    finally:
        release.set()
        scheduler.stop()
    assert all(4 <= len(c.calls) <= 7 for c in healthy), [len(c.calls) for c in healthy]
    assert len(stuck.calls) == 1  # never started again while its first refresh was stuck
    assert scheduler.skipped >= 3
    # spread over the interval, not all at once: the first calls of the first cycle are staggered
    firsts = [c.calls[0] for c in healthy]
    assert max(firsts) - min(firsts) >= 0.1
