"""The one interface of the delivery stages: a stage takes a page and returns it, perhaps decided.

A `Page` is one claimed outbox delivery on its way out. Each stage returns it unchanged, or with an
`Outcome` (sent, failed, retry, muted, superseded, digested, postponed). Stages that decide whether to send
(mute, dedup, throttle, send) pass an already decided page on untouched; retry looks only at a failed
send; record stores whatever was decided. So a new stage is one class with a `name` and `__call__`,
put in its place in `pipeline.py`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal, Protocol, Sequence

from vigil.notifier.deliveries import Delivery

Result = Literal["sent", "failed", "retry", "muted", "superseded", "digested", "postponed"]
ATTEMPTED: frozenset[Result] = frozenset({"sent", "failed", "retry"})  # a send was tried


@dataclass(frozen=True)
class Outcome:
    result: Result
    at: float  # when it was decided (the worker's clock)
    error: str | None = None  # why the send failed
    duration_s: float = 0.0  # how long the send took
    due_at: float | None = None  # retry / postponed: when the delivery is due again
    retryable: bool = True  # failed: False when a retry cannot help (the channel left the config)
    held: dict | None = None  # muted on purpose (a maintenance window): the `page_held` event's detail
    fallback: object | None = None  # failed: the person's next contact (a `ContactRef`) gets the page
    write: object | None = None  # sent: the send's `OwnWrite`, done when recording it


@dataclass(frozen=True)
class Page:
    delivery: Delivery
    now: float  # when the worker claimed it
    outcome: Outcome | None = None

    def decided(self, outcome: Outcome) -> "Page":
        return replace(self, outcome=outcome)


class Stage(Protocol):
    name: str

    def __call__(self, page: Page) -> Page: ...


def run_stages(stages: Sequence[Stage], page: Page) -> Page:
    """Pass `page` through every stage in order."""
    for stage in stages:
        page = stage(page)
    return page
