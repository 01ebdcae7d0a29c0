"""The outbox worker: claim due deliveries, pass each through the delivery stages (`pipeline.py`)."""

from __future__ import annotations

import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Sequence

from vigil.notifier.clock import Clock
from vigil.notifier.delivery.stage import ATTEMPTED, Page, Stage, run_stages
from vigil.notifier.store.outbox import Outbox

log = logging.getLogger(__name__)
# a claimed delivery is not claimed again for this long: it covers a slow send when two notifiers share
# one database, and bounds how long a page claimed just before a crash waits after the restart
LEASE_S = 30.0
BATCH = 20
SEND_THREADS = 4


class DeliveryWorker:
    """Drains the outbox in a background thread (or step by step with `run_once`)."""

    def __init__(self, outbox: Outbox, stages: Sequence[Stage], clock: Clock, poll_interval_s: float):
        self._outbox = outbox
        self._stages = list(stages)
        self._clock = clock
        self._poll_interval_s = poll_interval_s
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="vigil-notifier-delivery", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def wake(self) -> None:
        """New deliveries were enqueued: look now instead of at the next poll."""
        self._wake.set()

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                self.run_once()
            except Exception:  # the database may be briefly locked or down: keep the worker alive
                log.exception("delivery worker pass failed; retrying")
            self._wake.wait(self._poll_interval_s)
            self._wake.clear()

    def run_once(self) -> int:
        """Pass every due delivery through the stages once; returns how many sends were attempted.

        Deliveries go through in parallel so one slow channel (an SMTP server timing out) does not
        hold back the others.
        """
        now = self._clock()
        pages = [Page(delivery, now) for delivery in self._outbox.claim_due(now, BATCH, LEASE_S)]
        if len(pages) <= 1:
            done = [run_stages(self._stages, page) for page in pages]
        else:
            with ThreadPoolExecutor(max_workers=min(SEND_THREADS, len(pages))) as pool:
                done = list(pool.map(partial(run_stages, self._stages), pages))
        return sum(page.outcome.result in ATTEMPTED for page in done)
