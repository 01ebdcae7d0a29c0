"""The delivery stages, in one module as Alertmanager's notify.go keeps its own: each claimed page
passes them in this order (`pipeline.py` builds the list, `worker.py` runs it):

    mute -> dedup -> storm -> throttle -> send -> retry -> fallback -> record

`Page`, `Outcome` and the `Stage` interface come first; then each stage, with what it decides. A new
stage is one class with a `name` and `__call__`, put in its place in `pipeline.py`.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from dataclasses import dataclass, replace
from typing import Callable, Literal, Mapping, Protocol, Sequence, TypeVar

import sqlalchemy as sa

from vigil.common.times import rfc3339
from vigil.notifier.core.clock import Clock
from vigil.notifier.core.deliveries import Delivery
from vigil.notifier.delivery.channels import Sender
from vigil.notifier.metrics import NotifierMetrics
from vigil.notifier.core.models import MAX_TITLE_CHARS, shorten
from vigil.notifier.store.maintenance import Maintenance
from vigil.notifier.store.outbox import Attempt, Outbox
from vigil.oncall.model import OncallConfig
from vigil.oncall.plan import config_maintenance
from vigil.oncall.schedule_model import zone_named
from vigil.oncall.schedules import to_unix


# --- stage ----------------------------------------------------------------------------------------
# The one interface of the delivery stages: a stage takes a page and returns it, perhaps decided.
#
# A `Page` is one claimed outbox delivery on its way out. Each stage returns it unchanged, or with an
# `Outcome` (sent, failed, retry, muted, superseded, digested, postponed). Stages that decide whether to send
# (mute, dedup, throttle, send) pass an already decided page on untouched; retry looks only at a failed
# send; record stores whatever was decided. So a new stage is one class with a `name` and `__call__`,
# put in its place in `pipeline.py`.

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


# --- mute -----------------------------------------------------------------------------------------
# Mute stage: a page that must not go out now ends `muted`, without a send attempt.
#
# - A firing page whose incident has resolved while it waited (throttled, between retries, or until its
#   escalation step was due): paging "FIRING" now would be stale; the resolved page tells the story.
# - A firing page whose incident has been acknowledged: someone is on it (a re-page after
#   `repage_acknowledged_after` is a new page, enqueued once the acknowledgement has expired).
# - A resolved page to a contact whose firing pages of the incident were never sent (the SMS a minute
#   after the call, muted by the acknowledgement; a phone that failed and fell back to SMS): nobody
#   heard of the firing there, so nobody hears of its end there. While such a firing page still waits,
#   the resolved one is postponed (re-checked every few seconds) until the firing one's fate is known.
#   A resolved page for an incident that paged nobody while it fired (Alertmanager's firing
#   notification never arrived) still goes out: the on-call learns that something happened.
# - Any page of an incident whose labels match an active maintenance window (made through the API/CLI,
#   or written in the on-call file; `window_holding`): recorded on the incident's timeline as
#   `page_held`, not sent. Its resolved page is held too, unless the person had been sent the firing one
#   before the window began. The escalation engine asks the same question before it moves a policy on:
#   while a window holds the incident, its escalation pauses (`vigil.notifier.engine.pause`).
#
# Resolved pages are otherwise never muted. A storm-control digest stands for pages of several incidents
# and is never muted here (its pages were checked before they were folded).

# incident id -> {"state": triggered|acknowledged|resolved, "labels": {...}} (None: no such incident)
IncidentOf = Callable[[int], Mapping | None]
# (labels, now) -> the `page_held` detail of the window holding them, or None
WindowFor = Callable[[dict, float], dict | None]
# delivery -> what became of the incident's firing pages to the same person and contact (Outbox.firing_page_fate)
FiringFate = Callable[[Delivery], tuple[str, float | None]]
RECHECK_S = 2.0  # a resolved page waiting on a firing one looks again at least this often


class MuteStage:
    name = "mute"

    def __init__(self, incident_of: IncidentOf, window_for: WindowFor, firing_fate: FiringFate):
        self._incident_of = incident_of
        self._window_for = window_for
        self._firing_fate = firing_fate

    def __call__(self, page: Page) -> Page:
        delivery = page.delivery
        if page.outcome is not None or delivery.is_digest:
            return page
        incident = self._incident_of(delivery.incident_id)
        if incident is None:
            return page
        firing = delivery.page_status == "firing"
        if firing and incident["state"] in ("resolved", "acknowledged"):
            return page.decided(Outcome("muted", page.now))
        fate = None if firing else self._firing_fate(delivery)
        if fate is not None and fate[0] == "pending":
            wait = min(max(fate[1] - page.now, 0.5), RECHECK_S)
            return page.decided(Outcome("postponed", page.now, due_at=page.now + wait))
        if fate is not None and fate[0] == "unsent":
            return page.decided(Outcome("muted", page.now))
        held = self._window_for(incident["labels"], page.now)
        if held is not None and (firing or fate[0] != "sent"):
            return page.decided(Outcome("muted", page.now, held=held))
        return page


@dataclass(frozen=True)
class Held:
    """A maintenance window holding an incident's pages: `detail` (the `page_held` event's: reason,
    window id or "on-call file", why, by, until) and when the window ends (`until`, Unix seconds)."""

    detail: dict
    until: float


def window_holding(maintenance: Maintenance, oncall: OncallConfig, labels: dict, now: float,
                   conn: sa.Connection | None = None) -> Held | None:
    """The maintenance window holding pages of `labels` at `now`, or None: the windows made through the
    API/CLI first (read on `conn` if given), then those of the on-call file."""
    window = maintenance.active_for(labels, now, conn)
    if window is not None:
        return Held(dict(reason="maintenance", window=window.id, why=window.reason, by=window.created_by,
                         until=rfc3339(window.end)), window.end)
    configured = config_maintenance(oncall, labels, now)
    if configured is None:
        return None
    end = to_unix(configured.end, zone_named(oncall.timezone))
    return Held(dict(reason="maintenance", window="on-call file", why=configured.reason, until=rfc3339(end)), end)


# --- dedup ----------------------------------------------------------------------------------------
# Dedup stage: of the firing pages of one incident waiting for one channel, only the newest is sent.
#
# Alertmanager sends a group's whole state every time, so a later page of an incident lists every alert
# an earlier one did. When pages pile up for a channel (throttled, or retrying while it is down), the
# older ones end `superseded` without a send, and the newest carries the news: one SMS instead of three.
#
# The other dedup layers sit before the outbox: a notification delivered again (an HA peer, a retry) is
# stored once and never routed (`WebhookPayload.dedup_key`, in the store's ingest), and a notification
# enqueues at most one page per (target, channel) (a unique key of the outbox).

class DedupStage:
    name = "dedup"

    def __init__(self, newer_page_waiting: Callable[[Delivery], bool]):
        self._newer_page_waiting = newer_page_waiting

    def __call__(self, page: Page) -> Page:
        if page.outcome is not None or page.delivery.page_status != "firing" or page.delivery.is_digest:
            return page
        if self._newer_page_waiting(page.delivery):
            return page.decided(Outcome("superseded", page.now))
        return page


# --- throttle -------------------------------------------------------------------------------------
# Throttle stage: at most N pages per recipient channel per minute; the rest wait, none are dropped.
#
# The limit is the channel's `max_per_minute` (apprise channels; the notifier's default otherwise); the
# local inbox is not limited. A page over the limit is postponed to the moment the window lets it out.

WINDOW_S = 60.0


class ThrottleStage:
    name = "throttle"

    def __init__(self, per_minute: Callable[[Delivery], int | None]):
        self._per_minute = per_minute
        self._sent: dict[tuple[str, int], deque[float]] = {}
        self._lock = threading.Lock()  # pages of one batch pass the stages in parallel

    def __call__(self, page: Page) -> Page:
        if page.outcome is not None:
            return page
        delivery = page.delivery
        wait = self.wait_for((delivery.target, delivery.channel_index), page.now, self._per_minute(delivery))
        if wait > 0:
            return page.decided(Outcome("postponed", page.now, due_at=page.now + wait))
        return page

    def wait_for(self, key: tuple[str, int], now: float, per_minute: int | None) -> float:
        """Seconds `key` must wait before its next page (0: send now, and it is counted).

        `per_minute` None: the channel is not limited (the local inbox).
        """
        if per_minute is None:
            return 0.0
        with self._lock:
            sent = self._sent.setdefault(key, deque())
            while sent and sent[0] <= now - WINDOW_S:
                sent.popleft()
            if len(sent) >= per_minute:
                return sent[0] + WINDOW_S - now
            sent.append(now)
            return 0.0


# --- storm ---------------------------------------------------------------------------------------
# Storm control: past N pages a minute to one person's contact, the waiting pages become one digest.
#
# When an alert storm would ring one phone forty times, the person gets the first N pages (the on-call
# file's `storm.max_pages_per_minute`), then ONE digest page that lists the pages waiting for that
# contact and says how many it stands for. Pages over the limit while that digest waits join it (one
# digest per contact per minute window, never one per page). Nothing is dropped: every folded page
# stays in the outbox as `digested` (its `digest_of` is the digest row) with a `page_digested` event on
# its incident's timeline. When its window lets it out, the digest lists only what is still open
# (firing, unacknowledged) and counts what was settled meanwhile; if nothing is open it is not sent
# (`muted`). The window is counted per notifier process (like the throttle).

MAX_LISTED = 20  # the digest lists this many pages; the rest are counted
FORGET_PASSED_S = 300.0  # a page let through is being sent (or recorded) well within this


def digest_text(rows: Sequence, settled: int = 0) -> tuple[str, str]:
    """The digest's title and body for the outbox `rows` it lists (each has incident_id, page_status,
    title) and the count of its pages `settled` (acknowledged or resolved) since they were folded."""
    incidents = sorted({row.incident_id for row in rows})
    title = shorten(f"[DIGEST:{len(rows)}] {len(rows)} pages for {len(incidents)} incident(s) held back by storm "
                    f"control", MAX_TITLE_CHARS)
    lines = [f"This digest stands for {len(rows)} pages (more than the limit per minute arrived):"]
    lines += [f"- #{row.incident_id} {row.page_status}: {row.title or row.body}" for row in rows[:MAX_LISTED]]
    if len(rows) > MAX_LISTED:
        lines.append(f"… and {len(rows) - MAX_LISTED} more")
    if settled:
        lines.append(f"({settled} more held back were acknowledged or resolved since: not listed)")
    return title, "\n".join(lines)


class StormStage:
    name = "storm"

    def __init__(self, per_minute: Callable[[Delivery], int | None],
                 fold: Callable[[Delivery, float, float, frozenset[int]], frozenset[int]],
                 refresh: Callable[[Delivery], tuple[str, str] | None] = lambda digest: (digest.title, digest.body)):
        """`per_minute(delivery)`: the storm limit of its person's contact (None: no limit);
        `fold(delivery, claimed_at, due_at, passed)`: fold the pages waiting for that contact, except those
        in `passed` (let through, being sent), into its digest due at `due_at` (the outbox), returning the
        ids folded (pages of the same batch among them are closed as digested when they get here);
        `refresh(digest)`: the digest's text as it would go out now, None when nothing it lists is open."""
        self._per_minute = per_minute
        self._fold = fold
        self._refresh = refresh
        self._window = ThrottleStage(per_minute)  # its sliding minute window, counted per contact
        self._lock = threading.Lock()  # pages of one batch pass the stages in parallel
        # per contact: delivery id -> when it was let through (being sent: never folded)
        self._passed: dict[tuple[str, int], dict[int, float]] = {}
        self._digest_waiting: set[tuple[str, int]] = set()  # contacts whose digest waits: pages join it
        self._folded: dict[int, float] = {}  # delivery id -> when folded (a page of the batch not yet here)

    def __call__(self, page: Page) -> Page:
        if page.outcome is not None:
            return page
        delivery = page.delivery
        key = (delivery.target, delivery.channel_index)
        limit = self._per_minute(delivery)
        if limit is None:
            return page
        with self._lock:  # a page joins a digest either before its text is read here, or never
            if delivery.is_digest:
                text = self._refresh(delivery)
                if text is None:  # everything it stood for was acknowledged or resolved meanwhile
                    self._digest_waiting.discard(key)
                    return page.decided(Outcome("muted", page.now))
                delivery = replace(delivery, title=text[0], body=text[1])
                page = replace(page, delivery=delivery)
            if self._folded.pop(delivery.id, None) is not None:  # folded by another page meanwhile
                return page.decided(Outcome("digested", page.now))
            passed = self._passed.setdefault(key, {})
            for old in [known for known, at in passed.items() if at < page.now - FORGET_PASSED_S]:
                del passed[old]
            for old in [known for known, at in self._folded.items() if at < page.now - FORGET_PASSED_S]:
                del self._folded[old]
            if delivery.id in passed:  # a retry of a page let through: the same page, not a new one
                return page
            if key in self._digest_waiting and not delivery.is_digest:  # the digest goes first: join it
                self._note_folded(self._fold(delivery, page.now, page.now, frozenset(passed)), delivery, page.now)
                return page.decided(Outcome("digested", page.now))
            wait = self._window.wait_for(key, page.now, limit)
            if wait <= 0:
                passed[delivery.id] = page.now
                if delivery.is_digest:
                    self._digest_waiting.discard(key)
                return page
            if delivery.is_digest:  # a digest is never folded again: it waits for its turn
                return page.decided(Outcome("postponed", page.now, due_at=page.now + wait))
            self._note_folded(self._fold(delivery, page.now, page.now + wait, frozenset(passed)), delivery, page.now)
            self._digest_waiting.add(key)
        return page.decided(Outcome("digested", page.now))

    def _note_folded(self, ids: frozenset[int], delivery: Delivery, now: float) -> None:
        self._folded.update((other, now) for other in ids if other != delivery.id)


# --- send -----------------------------------------------------------------------------------------
# Send stage: hand the page to its channel's sender (apprise, or the local inbox) and note the result.
#
# A sender that raises is a failed send (a plugin bug must not kill the worker). A page whose channel
# is no longer in the on-call config fails for good: a retry cannot bring the channel back.

CHANNEL_GONE = "channel no longer in the on-call config"


class SendStage:
    name = "send"

    def __init__(self, sender_for: Callable[[Delivery], Sender | None], clock: Clock):
        self._sender_for = sender_for
        self._clock = clock

    def __call__(self, page: Page) -> Page:
        if page.outcome is not None:
            return page
        sender = self._sender_for(page.delivery)
        started = self._clock()
        if sender is None:
            return page.decided(Outcome("failed", started, error=CHANNEL_GONE, retryable=False))
        try:
            result = sender.send(page.delivery)
            ok, error, write, retryable = result.ok, result.error, result.write, result.retryable
        except Exception as exc:
            ok, error, write, retryable = False, f"{type(exc).__name__}: {exc}", None, True
        done = self._clock()
        return page.decided(Outcome("sent" if ok else "failed", done, error=None if ok else error,
                                    duration_s=max(0.0, done - started), write=write if ok else None,
                                    retryable=retryable))


# --- retry ----------------------------------------------------------------------------------------
# Retry stage: a failed send is tried again after base, 2·base, 4·base … (capped), up to a number of
# attempts in all; after the last one the delivery stays `failed`.

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


# --- fallback -------------------------------------------------------------------------------------
# Fallback stage: a person's contact that keeps failing hands the page to their next contact.
#
# After `after_attempts` failed sends of an escalation page (or one failure that a retry cannot mend: the
# contact left the on-call file), the page is given up on that contact (`failed`, no more retries) and
# enqueued, due now, for the next contact in the person's fallback order (the order of `contacts` in
# the on-call file): "call until reached". The timeline says so (`page_fallback`). A person with no
# further contact keeps the ordinary retries. Legacy routes page every channel at once, so their pages
# (no tier) never fall back.

DEFAULT_AFTER_ATTEMPTS = 3


class NextContact(Protocol):
    contact_index: int
    contact: str
    kind: str


class FallbackStage:
    name = "fallback"

    def __init__(self, after_attempts: int, next_contact: Callable[[Delivery], NextContact | None]):
        """`next_contact(delivery)`: the person's next contact after the delivery's, or None. The record
        stage enqueues the page for it, after the failed attempt."""
        self._after_attempts = after_attempts
        self._next_contact = next_contact

    def __call__(self, page: Page) -> Page:
        outcome, delivery = page.outcome, page.delivery
        if outcome is None or outcome.result not in ("failed", "retry") or delivery.tier is None:
            return page
        if delivery.attempts + 1 < self._after_attempts and outcome.retryable:
            return page
        following = self._next_contact(delivery)
        if following is None:
            return page
        return page.decided(replace(outcome, result="failed", due_at=None, fallback=following))


# --- record ---------------------------------------------------------------------------------------
# Record stage: write what the other stages decided into the outbox, and count it in the metrics.
#
# sent / retry / failed: one attempt row and the delivery's new state (`retry` stays pending, due at its
# backoff), each attempt also on the incident's timeline (`page_attempt`); postponed: due later, nothing
# counted; muted / superseded / digested: closed without an attempt (a page held by a maintenance window
# as `page_held` on the timeline). A page the fallback stage handed on is enqueued for the next contact
# after its failed attempt is recorded. A send that hands back its own write (the local inbox) has it done
# in the same transaction as its attempt.
#
# The worker records the pages of one pass together, and claims the next ones in the same transaction
# (`record_then`): one write lock a pass.

log = logging.getLogger(__name__)
T = TypeVar("T")


class RecordStage:
    name = "record"

    def __init__(self, outbox: Outbox, metrics: NotifierMetrics):
        self._outbox = outbox
        self._metrics = metrics

    def __call__(self, page: Page) -> Page:
        return self.record_all([page])[0]

    def record_all(self, pages: Sequence[Page]) -> list[Page]:
        """Record `pages` in ONE transaction (one commit, one write lock, for all); if that fails, each page
        in a transaction of its own, so one bad row does not hold back the rest. Returns those recorded."""
        return self.record_then(pages, None)[0]

    def record_then(self, pages: Sequence[Page],
                    then: Callable[[sa.Connection], T] | None) -> tuple[list[Page], T | None]:
        """`record_all`, and `then(conn)` in the same transaction after the writes (the worker's next
        claim: one write lock a pass); its result, or None when the transaction failed."""
        for page in pages:
            if page.outcome is None:
                raise ValueError(f"delivery {page.delivery.id} left the stages undecided")
        recorded, result = list(pages), None
        try:
            with self._outbox.writing() as conn:
                self._write(pages, conn)
                if then is not None:
                    result = then(conn)
        except Exception:
            if len(pages) <= 1 and then is None:
                raise
            log.exception("recording %d deliveries at once failed; recording them one by one", len(pages))
            recorded = []
            for page in pages:
                try:
                    with self._outbox.writing() as conn:
                        self._write([page], conn)
                    recorded.append(page)
                except Exception:  # left leased: claimed and tried again when the lease ends
                    log.exception("recording delivery %d failed", page.delivery.id)
        for page in recorded:
            self._count(page)
        return recorded, result

    def _write(self, pages: Sequence[Page], conn) -> None:
        own_writes: dict = {}  # write_all -> its items
        attempts = []
        for page in pages:
            outcome, delivery = page.outcome, page.delivery
            if outcome.result == "postponed":
                self._outbox.postpone(delivery.id, outcome.due_at, conn=conn)
            elif outcome.result not in ATTEMPTED:
                self._outbox.close_unsent(delivery.id, outcome.result, outcome.at, held=outcome.held, conn=conn)
            else:
                if outcome.write is not None:
                    own_writes.setdefault(outcome.write.write_all, []).append(outcome.write.item)
                attempts.append(Attempt(delivery, outcome.at, outcome.result == "sent", outcome.error,
                                        outcome.duration_s, outcome.due_at if outcome.result == "retry" else None))
        for write_all, items in own_writes.items():
            write_all(conn, items)
        self._outbox.record_attempts(conn, attempts)
        for page in pages:
            following = page.outcome.fallback
            if following is not None:  # after its failed attempt
                self._outbox.hand_to_next_contact(page.delivery, following.contact_index, following.contact,
                                                  following.kind, page.outcome.at, conn=conn)

    def _count(self, page: Page) -> None:
        """Metrics and log lines, once the page is committed."""
        outcome, delivery = page.outcome, page.delivery
        if outcome.result == "postponed":
            return
        self._metrics.deliveries.labels(delivery.channel_type, outcome.result).inc()
        if outcome.result not in ATTEMPTED:
            log.info("delivery %d to %s/%s not sent: %s", delivery.id, delivery.target, delivery.channel_type,
                     outcome.result)
        elif outcome.result == "sent":
            self._metrics.latency.labels(delivery.channel_type).observe(max(0.0, outcome.at - delivery.created_at))
        else:
            log.warning("delivery %d to %s/%s failed (attempt %d, %s): %s", delivery.id, delivery.target,
                        delivery.channel_type, delivery.attempts + 1, outcome.result, outcome.error)
