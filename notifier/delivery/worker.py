"""The outbox worker: throttle → send → record the attempt → retry with exponential backoff."""

from __future__ import annotations

import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Callable

from vigil.notifier.delivery.pipeline import DeliveryPipeline
from vigil.notifier.delivery.throttle import Throttle
from vigil.notifier.metrics import NotifierMetrics
from vigil.notifier.settings import NotifierSettings
from vigil.notifier.store import Delivery, Store

log = logging.getLogger(__name__)
# a claimed delivery is not claimed again for this long: it covers a slow send when two notifiers share
# one database, and bounds how long a page claimed just before a crash waits after the restart
LEASE_S = 30.0
BATCH = 20
SEND_THREADS = 4


def retry_delay(attempts_done: int, base_s: float, max_s: float) -> float:
    """Backoff after `attempts_done` failed attempts: base, 2·base, 4·base … capped at max."""
    return min(max_s, base_s * 2 ** (attempts_done - 1))


class DeliveryWorker:
    """Drains the outbox in a background thread (or step by step with `run_once`)."""

    def __init__(self, store: Store, pipeline: DeliveryPipeline, settings: NotifierSettings,
                 metrics: NotifierMetrics, clock: Callable[[], float] = time.time):
        self._store = store
        self._pipeline = pipeline
        self._settings = settings
        self._metrics = metrics
        self._clock = clock
        self._throttle = Throttle()
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
            self._wake.wait(self._settings.poll_interval_s)
            self._wake.clear()

    def run_once(self) -> int:
        """Attempt every due delivery once; returns how many were attempted.

        Sends run in parallel so one slow channel (an SMTP server timing out) does not hold back the
        others; the throttle is consulted first, in this thread.
        """
        now = self._clock()
        ready = []
        for delivery in self._store.claim_due(now, BATCH, LEASE_S):
            wait = self._throttle.wait_for((delivery.target, delivery.channel_index), now,
                                           self._pipeline.pages_per_minute(delivery))
            if wait > 0:
                self._store.postpone(delivery.id, now + wait)
            else:
                ready.append(delivery)
        if len(ready) <= 1:
            return sum(self._attempt(delivery) for delivery in ready)
        with ThreadPoolExecutor(max_workers=min(SEND_THREADS, len(ready))) as pool:
            return sum(pool.map(self._attempt, ready))

    def _attempt(self, delivery: Delivery) -> int:
        sender = self._pipeline.sender_for(delivery)
        started = time.monotonic()
        if sender is None:
            ok, error = False, "channel no longer in the on-call config"
        else:
            try:
                result = sender.send(delivery)
                ok, error = result.ok, result.error
            except Exception as exc:  # a plugin bug must not kill the worker; record it and retry
                ok, error = False, f"{type(exc).__name__}: {exc}"
        duration = time.monotonic() - started
        done = self._clock()
        attempts = delivery.attempts + 1
        retry_at = None
        if not ok and sender is not None and attempts < self._settings.max_attempts:
            retry_at = done + retry_delay(attempts, self._settings.retry_base_s, self._settings.retry_max_s)
        self._store.record_attempt(delivery.id, done, ok, error, duration, retry_at)
        result = "sent" if ok else ("retry" if retry_at is not None else "failed")
        self._metrics.deliveries.labels(delivery.channel_type, result).inc()
        if ok:
            self._metrics.latency.labels(delivery.channel_type).observe(max(0.0, done - delivery.created_at))
        else:
            log.warning("delivery %d to %s/%s failed (attempt %d, %s): %s", delivery.id, delivery.target,
                        delivery.channel_type, attempts, result, error)
        return 1
