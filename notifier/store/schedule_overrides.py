"""Schedule overrides made in the console: all SQL on `schedule_overrides`.

A row says `person` covers `schedule` from `start_at` to `end_at` (instead of `replaces`, who the
schedule had then), why, who made it and when. Cancelling keeps the row (`cancelled_by`,
`cancelled_at`): the schedule's history says what was planned and undone. `version()` changes whenever
a row is added or cancelled, so a notifier knows when to read them again.
"""

from __future__ import annotations

from dataclasses import dataclass

import sqlalchemy as sa

from vigil.notifier.schema import schedule_overrides as table
from vigil.notifier.store.engine import reading


@dataclass(frozen=True)
class ConsoleOverride:
    id: int
    schedule: str
    person: str
    start_at: float
    end_at: float
    replaces: str | None
    reason: str
    created_by: str
    created_at: float
    cancelled_by: str | None
    cancelled_at: float | None


class ScheduleOverrides:
    def __init__(self, engine: sa.Engine):
        self._engine = engine

    def add(self, schedule: str, person: str, start: float, end: float, replaces: str | None, reason: str,
            by: str, now: float) -> ConsoleOverride:
        with self._engine.begin() as conn:
            new_id = conn.execute(table.insert().values(
                schedule=schedule, person=person, start_at=start, end_at=end, replaces=replaces, reason=reason,
                created_by=by, created_at=now)).inserted_primary_key[0]
            row = conn.execute(sa.select(table).where(table.c.id == new_id)).one()
        return ConsoleOverride(**row._mapping)

    def cancel(self, schedule: str, override_id: int, by: str, now: float) -> ConsoleOverride | None:
        """Cancel `schedule`'s override `override_id` if it is not already; the row as it is then (None:
        `schedule` has no such override, and nothing changed)."""
        mine = (table.c.id == override_id, table.c.schedule == schedule)
        with self._engine.begin() as conn:
            conn.execute(table.update().where(*mine, table.c.cancelled_at.is_(None))
                         .values(cancelled_by=by, cancelled_at=now))
            row = conn.execute(sa.select(table).where(*mine)).one_or_none()
        return None if row is None else ConsoleOverride(**row._mapping)

    def live(self, since: float) -> list[ConsoleOverride]:
        """The overrides not cancelled that end after `since`, oldest made first (later ones win)."""
        with reading(self._engine) as conn:
            rows = conn.execute(sa.select(table).where(table.c.cancelled_at.is_(None), table.c.end_at > since)
                                .order_by(table.c.id)).all()
        return [ConsoleOverride(**row._mapping) for row in rows]

    def of_schedule(self, schedule: str, since: float, limit: int = 50) -> list[ConsoleOverride]:
        """`schedule`'s overrides ending after `since`, cancelled ones too, newest made first."""
        with reading(self._engine) as conn:
            rows = conn.execute(sa.select(table).where(table.c.schedule == schedule, table.c.end_at > since)
                                .order_by(table.c.id.desc()).limit(limit)).all()
        return [ConsoleOverride(**row._mapping) for row in rows]

    def version(self) -> tuple:
        """Changes whenever an override is added or cancelled."""
        with reading(self._engine) as conn:
            row = conn.execute(sa.select(sa.func.count(), sa.func.max(table.c.id),
                                         sa.func.count(table.c.cancelled_at))).one()
        return tuple(row)
