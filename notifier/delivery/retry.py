"""Retry stage: a failed send is tried again after base, 2·base, 4·base … (capped), up to a number of
attempts in all; after the last one the delivery stays `failed`."""

from __future__ import annotations

from dataclasses import replace

from vigil.notifier.delivery.stage import Page


def retry_delay(attempts_done: int, base_s: float, max_s: float) -> float:
    """Backoff after `attempts_done` failed attempts: base, 2·base, 4·base … capped at max."""
    return min(max_s, base_s * 2 ** (attempts_done - 1))


class RetryStage:
    name = "retry"

    def __init__(self, base_s: float, max_s: float, max_attempts: int):
        self._base_s, self._max_s, self._max_attempts = base_s, max_s, max_attempts

    def __call__(self, page: Page) -> Page:
        outcome = page.outcome
        if outcome is None or outcome.result != "failed" or not outcome.retryable:
            return page
        attempts = page.delivery.attempts + 1
        if attempts >= self._max_attempts:
            return page
        due = outcome.at + retry_delay(attempts, self._base_s, self._max_s)
        return page.decided(replace(outcome, result="retry", due_at=due))
