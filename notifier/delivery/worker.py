"""The outbox worker: claim due deliveries, pass each through the delivery stages (`pipeline.py`).

Sends run concurrently on a fixed pool of sender threads (a real channel — Twilio, Slack, SMTP — takes
100 ms or more per page, and one slow channel must not hold back the others); at most `max_in_flight`
pages are claimed and not yet recorded at any time. Each claimed page holds a lease in the database
(`LEASE_S`), so two notifiers on one database never take the same page. The pages that finished their
send are recorded together by the worker's own thread, and the next due pages claimed, in one
transaction per pass (`RecordStage.record_then`). The thread wakes when a page finishes, when new pages are enqueued (`wake`), and at the next
due time of the outbox (every `poll_interval_s` at most): a page leaves when it falls due, not at the
next poll.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Sequence

from vigil.notifier.core.clock import Clock
from vigil.notifier.delivery.stages import ATTEMPTED, Page, Stage, run_stages
from vigil.notifier.loop_thread import LoopThread
from vigil.notifier.store.outbox import Outbox

log = logging.getLogger(__name__)
# the record stage's `record_then(pages, then)`: record `pages`, run `then(conn)` in the same transaction
RecordThen = Callable[[list[Page], Callable], tuple[list[Page], object]]
# a claimed delivery is not claimed again for this long: it covers a slow send when two notifiers share
# one database, and bounds how long a page claimed just before a crash waits after the restart
LEASE_S = 30.0
BATCH = 100  # claimed at most per pass
SENDERS = 16  # sender threads: pages being sent at once
IN_FLIGHT_PER_SENDER = 4  # claimed ahead, so a sender never waits for the next claim
# passes start this far apart at least: pages that trickle in (one per webhook post) are recorded and
# claimed a few at a time, one write transaction for several, at the cost of this much delay at most
MIN_PASS_GAP_S = 0.05


class DeliveryWorker:
    """Drains the outbox in a background thread (or pass by pass with `run_once`)."""

    def __init__(self, outbox: Outbox, stages: Sequence[Stage], clock: Clock, poll_interval_s: float,
                 senders: int = SENDERS):
        self._outbox = outbox
        stages = list(stages)
        # every stage up to the send and its outcome runs per page on a sender thread; the record stage
        # (when it can) records a whole pass at once, and claims the next pages in the same transaction
        self._record_then: RecordThen | None = getattr(stages[-1], "record_then", None)
        self._per_page = stages[:-1] if self._record_then else stages
        self._clock = clock
        self._poll_interval_s = poll_interval_s
        self._max_in_flight = senders * IN_FLIGHT_PER_SENDER
        self._pool = ThreadPoolExecutor(max_workers=senders, thread_name_prefix="vigil-notifier-send")
        self._finished: queue.SimpleQueue[Page] = queue.SimpleQueue()
        self._in_flight: set[int] = set()  # delivery ids claimed by the loop and not yet recorded
        self._lock = threading.Lock()
        self._loop_thread = LoopThread("vigil-notifier-delivery", self._loop)

    def start(self) -> None:
        self._loop_thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        self._loop_thread.stop(timeout)
        self._pool.shutdown(wait=False, cancel_futures=True)

    def wake(self) -> None:
        """New deliveries were enqueued: look now instead of at the next poll."""
        self._loop_thread.wake()

    def run_once(self) -> int:
        """Claim the due deliveries (a batch), pass each through the stages, record them; returns how many
        sends were attempted."""
        pages = self._claim(BATCH)
        if len(pages) <= 1:
            decided = [run_stages(self._per_page, page) for page in pages]
        else:
            decided = list(self._pool.map(self._decide, pages))
        recorded = self._record_then(decided, None)[0] if self._record_then else decided
        return sum(page.outcome.result in ATTEMPTED for page in recorded)

    # --- the background loop ----------------------------------------------------------------------
    def _loop(self) -> None:
        last_pass = float("-inf")
        while not self._loop_thread.stopping:
            gap = MIN_PASS_GAP_S - (time.monotonic() - last_pass)
            if gap > 0:
                self._loop_thread.sleep(gap)
            last_pass = time.monotonic()
            wait = self._poll_interval_s
            try:
                if self._pass():
                    continue  # a full batch: more are likely due, look again at once
                next_due = self._outbox.next_due()
                if next_due is not None:
                    wait = min(wait, max(0.0, next_due - self._clock()))
            except Exception:  # the database may be briefly locked or down: keep the worker alive
                log.exception("delivery worker pass failed; retrying")
            self._loop_thread.idle(wait)  # a wake during the pass ends it at once
        left = self._drain()  # sends that finished while stopping: recorded (the rest stay leased)
        if left and self._record_then is not None:
            self._record_then(left, None)

    def _pass(self) -> bool:
        """Record the pages whose stages are done, claim as many due pages as there is room for (in the
        same transaction) and hand them to the senders; True when the claim was cut short by the batch
        size (not by room, nor by the pages due)."""
        finished = self._drain()
        with self._lock:
            room = self._max_in_flight - len(self._in_flight) + len(finished)
        limit = min(room, BATCH)
        now = self._clock()

        def claim(conn=None) -> list[Page]:
            return [Page(d, now) for d in self._outbox.claim_due(now, limit, LEASE_S, conn)] if limit > 0 else []

        try:
            if finished and self._record_then is not None:
                pages = self._record_then(finished, claim)[1] or []
            else:
                pages = claim()
        finally:
            with self._lock:
                self._in_flight.difference_update(page.delivery.id for page in finished)
        with self._lock:
            self._in_flight.update(page.delivery.id for page in pages)
        for page in pages:
            self._pool.submit(self._send_in_background, page)
        return len(pages) == limit == BATCH

    def _drain(self) -> list[Page]:
        """The pages whose stages are done, taken off the queue."""
        finished = []
        while True:
            try:
                finished.append(self._finished.get_nowait())
            except queue.Empty:
                return finished

    def _send_in_background(self, page: Page) -> None:
        try:
            self._finished.put(self._decide(page))
        except Exception:  # left leased: claimed and tried again when the lease ends
            log.exception("delivery %d failed in the stages", page.delivery.id)
            with self._lock:
                self._in_flight.discard(page.delivery.id)
        self._loop_thread.wake()

    # --- one page ---------------------------------------------------------------------------------
    def _claim(self, limit: int) -> list[Page]:
        now = self._clock()
        return [Page(delivery, now) for delivery in self._outbox.claim_due(now, limit, LEASE_S)]

    def _decide(self, page: Page) -> Page:
        return run_stages(self._per_page, page)
