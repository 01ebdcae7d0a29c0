"""The notifier benchmark's delay parts: how late pages leave after they fall due, with 1,000 open
incidents and 8 connections posting (unpaged) notifications all along.

- outbox due → page: each incident's page waits in the outbox with its own due time (the delivery
  worker alone);
- escalation due → page: each incident's next escalation step (tier 2) falls due at its own time, so the
  escalation engine claims it, pages tier 2 through the outbox and moves the escalation on.

Delays are read from the database file afterwards: per page its due time → enqueued (escalation only),
→ first send attempt, → recorded in the inbox.
"""

from __future__ import annotations

import sqlite3
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

LEAD_S = 8.0  # the server starts within this: every page falls due while it runs
GRACE_S = 60.0  # how long after the last due time the run waits for the last page


@dataclass
class Delays:
    """Seconds from due time to each stage, per page that reached it; `load` is the posting meanwhile."""

    expected: int
    to_enqueued: list[float]
    to_attempt: list[float]
    to_inbox: list[float]
    load: object | None  # the posts' LoadResult


def wait_inbox(folder: Path, count: int, timeout: float) -> list[float]:
    """Arrival times of the inbox pages once `count` have arrived (read from the database file)."""
    deadline = time.monotonic() + timeout
    times: list[float] = []
    with sqlite3.connect(folder / "notifier.db", timeout=30) as db:
        while time.monotonic() < deadline:
            times = [t for (t,) in db.execute("SELECT time FROM inbox_pages ORDER BY time")]
            if len(times) >= count:
                return times
            time.sleep(0.25)
    print(f"only {len(times)} of {count} pages reached the inbox in {timeout:.0f} s", file=sys.stderr)
    return times


def _under_load(folder: Path, db_url: str, workers: int, oncall: str, expected: int, window_s: float,
                load_bodies: list[bytes], servers, post_all, webhook: str):
    """Run the notifier until `expected` pages reached the inbox (or the grace ran out) while 8
    connections post `load_bodies`; returns the posts' LoadResult."""
    with servers.notifier(folder, db_url, workers, oncall) as (url, _pid):
        stop = threading.Event()
        load: list = []
        poster = threading.Thread(target=lambda: load.append(post_all(url + webhook, load_bodies, 8, servers.AUTH,
                                                                      stop)))
        poster.start()
        wait_inbox(folder, expected, timeout=LEAD_S + window_s + GRACE_S)
        stop.set()
        poster.join()
    return load[0] if load else None


def _spread(incidents: int, window_s: float) -> Callable[[int], float]:
    return lambda i: LEAD_S + window_s * i / incidents


def outbox_due(folder: Path, incidents: int, window_s: float, workers: int, load_bodies: list[bytes],
               servers, prefill, post_all, webhook: str) -> Delays:
    """Pages prefilled in the outbox, due over `window_s`: due → send attempt and due → inbox."""
    db_url = servers.prepare_notifier_dir(folder)
    due = prefill.prefill_pages(db_url, folder / "oncall.yaml", servers.TOKEN, incidents, _spread(incidents, window_s))
    load = _under_load(folder, db_url, workers, servers.ONCALL, incidents, window_s, load_bodies, servers, post_all,
                       webhook)
    with sqlite3.connect(folder / "notifier.db") as db:
        attempts = dict(db.execute("SELECT delivery_id, MIN(at) FROM delivery_attempts GROUP BY delivery_id"))
        arrived = dict(db.execute("SELECT delivery_id, time FROM inbox_pages"))
    return Delays(incidents, [], [attempts[d] - at for d, at in due.items() if d in attempts],
                  [arrived[d] - at for d, at in due.items() if d in arrived], load)


def escalation_due(folder: Path, incidents: int, window_s: float, workers: int, load_bodies: list[bytes],
                   servers, prefill, post_all, webhook: str) -> Delays:
    """Open incidents whose tier-2 step falls due over `window_s`: due → tier-2 page enqueued, → send
    attempt, → inbox."""
    db_url = servers.prepare_notifier_dir(folder, servers.ESCALATION_ONCALL)
    due = prefill.prefill_escalations(db_url, folder / "oncall.yaml", servers.TOKEN, incidents,
                                      _spread(incidents, window_s))
    load = _under_load(folder, db_url, workers, servers.ESCALATION_ONCALL, incidents, window_s, load_bodies,
                       servers, post_all, webhook)
    with sqlite3.connect(folder / "notifier.db") as db:
        pages = db.execute("SELECT id, incident_id, created_at FROM deliveries "
                           "WHERE tier = 1 AND page_status = 'firing'").fetchall()
        attempts = dict(db.execute("SELECT delivery_id, MIN(at) FROM delivery_attempts GROUP BY delivery_id"))
        arrived = dict(db.execute("SELECT delivery_id, time FROM inbox_pages"))
    pages = [(delivery, due[incident], created) for delivery, incident, created in pages if incident in due]
    return Delays(incidents, [created - at for _, at, created in pages],
                  [attempts[d] - at for d, at, _ in pages if d in attempts],
                  [arrived[d] - at for d, at, _ in pages if d in arrived], load)
