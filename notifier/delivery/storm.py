"""Storm control: past N pages a minute to one person's contact, the waiting pages become one digest.

When an alert storm would ring one phone forty times, the person gets the first N pages (the on-call
file's `storm.max_pages_per_minute`), then ONE digest page that lists the pages waiting for that
contact and says how many it stands for. Nothing is dropped: every folded page stays in the outbox as
`digested` (its `digest_of` is the digest row) with a `page_digested` event on its incident's timeline,
and the digest itself waits for the moment the minute window lets a page out. The window is counted
per notifier process (like the throttle).
"""

from __future__ import annotations

import threading
from typing import Callable, Sequence

from vigil.notifier.deliveries import Delivery
from vigil.notifier.delivery.stage import Outcome, Page
from vigil.notifier.delivery.throttle import ThrottleStage
from vigil.notifier.models import MAX_TITLE_CHARS, shorten

MAX_LISTED = 20  # the digest lists this many pages; the rest are counted
FORGET_PASSED_S = 300.0  # a page let through is being sent (or recorded) well within this


def digest_text(rows: Sequence) -> tuple[str, str]:
    """The digest's title and body for the folded outbox `rows` (each has incident_id, page_status, title)."""
    incidents = sorted({row.incident_id for row in rows})
    title = shorten(f"[DIGEST:{len(rows)}] {len(rows)} pages for {len(incidents)} incident(s) held back by storm "
                    f"control", MAX_TITLE_CHARS)
    lines = [f"This digest stands for {len(rows)} pages (more than the limit per minute arrived):"]
    lines += [f"- #{row.incident_id} {row.page_status}: {row.title}" for row in rows[:MAX_LISTED]]
    if len(rows) > MAX_LISTED:
        lines.append(f"… and {len(rows) - MAX_LISTED} more")
    return title, "\n".join(lines)


class StormStage:
    name = "storm"

    def __init__(self, per_minute: Callable[[Delivery], int | None],
                 fold: Callable[[Delivery, float, float, frozenset[int]], int | None]):
        """`per_minute(delivery)`: the storm limit of its person's contact (None: no limit);
        `fold(delivery, claimed_at, due_at, passed)`: fold the pages waiting for that contact, except those
        in `passed` (let through, being sent), into one digest due at `due_at` (the outbox)."""
        self._per_minute = per_minute
        self._fold = fold
        self._window = ThrottleStage(per_minute)  # its sliding minute window, counted per contact
        self._lock = threading.Lock()  # pages of one batch pass the stages in parallel
        # per contact: delivery id -> when it was let through (being sent: never folded)
        self._passed: dict[tuple[str, int], dict[int, float]] = {}

    def __call__(self, page: Page) -> Page:
        if page.outcome is not None:
            return page
        delivery = page.delivery
        limit = self._per_minute(delivery)
        if limit is None:
            return page
        key = (delivery.target, delivery.channel_index)
        with self._lock:
            passed = self._passed.setdefault(key, {})
            for old in [known for known, at in passed.items() if at < page.now - FORGET_PASSED_S]:
                del passed[old]
            if delivery.id in passed:  # a retry of a page let through: the same page, not a new one
                return page
            wait = self._window.wait_for(key, page.now, limit)
            if wait <= 0:
                passed[delivery.id] = page.now
                return page
            if delivery.is_digest:  # a digest is never folded again: it waits for its turn
                return page.decided(Outcome("postponed", page.now, due_at=page.now + wait))
            self._fold(delivery, page.now, page.now + wait, frozenset(passed))
        return page.decided(Outcome("digested", page.now))
