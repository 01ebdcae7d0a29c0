"""Heartbeats: all SQL on `heartbeats`, one row per heartbeat the notifier watches.

A row is made the first time a notifier watches the heartbeat (`watch`: its deadline counts from then
until the first beat; `rewatch` moves that start when notifiers start again after the deadline passed
unwatched), `last_seen_at` moves with each beat, and `missing_since` holds the deadline that
passed unheard while the heartbeat's incident (`incident_id`) is open. The monitor and the heartbeat
route change a row only after locking it (`lock`): `FOR UPDATE` on PostgreSQL, `SKIP LOCKED` for the
monitor so that of several notifiers on one database exactly one handles a deadline; on SQLite the
write lock (BEGIN IMMEDIATE) serialises them.
"""

from __future__ import annotations

from dataclasses import dataclass

import sqlalchemy as sa

from vigil.notifier.schema import heartbeats
from vigil.notifier.store.engine import reading
from vigil.notifier.store.outbox import insert_if_new


@dataclass(frozen=True)
class HeartbeatRow:
    name: str
    watching_since: float
    last_seen_at: float | None
    beats: int
    missing_since: float | None
    incident_id: int | None

    def deadline(self, timeout_s: float) -> float:
        """When the heartbeat counts as missing unless heard before: a timeout after the last beat, or
        after the notifiers (re)started watching if that is later."""
        return max(self.last_seen_at or self.watching_since, self.watching_since) + timeout_s


class Heartbeats:
    def __init__(self, engine: sa.Engine):
        self._engine = engine

    def watch(self, conn: sa.Connection, names: list[str], now: float) -> None:
        """A row for each of `names` that has none yet (a concurrent notifier's insert wins quietly)."""
        if not names:
            return
        conn.execute(insert_if_new(conn, heartbeats, "name").values([dict(name=name, watching_since=now)
                                                                     for name in names]))

    def rewatch(self, conn: sa.Connection, name: str, now: float) -> None:
        """Count the deadline from `now`: no notifier was watching when it passed."""
        conn.execute(heartbeats.update().where(heartbeats.c.name == name).values(watching_since=now))

    def lock(self, conn: sa.Connection, name: str, skip_locked: bool = False) -> HeartbeatRow | None:
        """The row of `name`, locked on `conn` until the commit (None: no row, or held elsewhere and
        `skip_locked`)."""
        query = sa.select(heartbeats).where(heartbeats.c.name == name)
        if conn.dialect.name == "postgresql":
            query = query.with_for_update(skip_locked=skip_locked)
        found = conn.execute(query).first()
        return None if found is None else HeartbeatRow(**found._mapping)

    def heard(self, conn: sa.Connection, name: str, now: float) -> None:
        conn.execute(heartbeats.update().where(heartbeats.c.name == name)
                     .values(last_seen_at=now, beats=heartbeats.c.beats + 1))

    def set_missing(self, conn: sa.Connection, name: str, since: float, incident_id: int) -> None:
        conn.execute(heartbeats.update().where(heartbeats.c.name == name)
                     .values(missing_since=since, incident_id=incident_id))

    def set_alive(self, conn: sa.Connection, name: str) -> None:
        """Heard again: no longer missing (`incident_id` keeps the last incident, for people to find)."""
        conn.execute(heartbeats.update().where(heartbeats.c.name == name).values(missing_since=None))

    def all(self) -> dict[str, HeartbeatRow]:
        with reading(self._engine) as conn:
            return {r.name: HeartbeatRow(**r._mapping) for r in conn.execute(sa.select(heartbeats))}
