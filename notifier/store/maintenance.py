"""Maintenance windows made through the API or the CLI: all SQL on `maintenance_windows`.

A window holds the pages of incidents whose labels carry every one of its matchers (label equality),
from `starts_at` until `ends_at`, or until it is ended early (`ended_at`). Held pages are recorded on
the incident's timeline, never sent (the mute stage), and the incident's escalation pauses until the
window is over (`vigil.notifier.engine.pause`). Windows written in the on-call file are the
config's (`vigil.oncall.plan.config_maintenance`); these are the ones people add while working.
"""

from __future__ import annotations

import json
from collections import namedtuple
from dataclasses import dataclass

import sqlalchemy as sa

from vigil.notifier.schema import maintenance_windows
from vigil.notifier.store.engine import reading
from vigil.notifier.store.escalations import Escalations
from vigil.notifier.store.prepared import Prepared
from vigil.common.times import rfc3339


@dataclass(frozen=True)
class Window:
    id: int
    matchers: dict[str, str]
    starts_at: float
    ends_at: float
    reason: str | None
    created_by: str | None
    created_at: float
    ended_at: float | None

    @property
    def end(self) -> float:
        """When the window ends (or was ended)."""
        return self.ends_at if self.ended_at is None else min(self.ends_at, self.ended_at)

    def active_at(self, now: float) -> bool:
        return self.starts_at <= now < self.end

    def over_at(self, now: float) -> bool:
        """Whether the window has ended (or been ended) by `now`."""
        return now >= self.ends_at or (self.ended_at is not None and now >= self.ended_at)

    def matches(self, labels: dict[str, str]) -> bool:
        return all(labels.get(key) == value for key, value in self.matchers.items())

    def as_json(self, now: float) -> dict:
        return dict(id=self.id, source="api", match=self.matchers, starts_at=rfc3339(self.starts_at), ends_at=rfc3339(self.ends_at),
                    reason=self.reason, created_by=self.created_by, created_at=rfc3339(self.created_at),
                    ended_at=rfc3339(self.ended_at), active=self.active_at(now))


class Maintenance:
    def __init__(self, engine: sa.Engine):
        self._engine = engine

    def create(self, matchers: dict[str, str], starts_at: float, ends_at: float, reason: str | None,
               created_by: str | None, now: float) -> Window:
        """Add a window (the caller has checked that `matchers` is not empty and `ends_at > starts_at`)."""
        with self._engine.begin() as conn:
            window_id = conn.execute(maintenance_windows.insert().values(
                matchers=json.dumps(matchers, sort_keys=True), starts_at=starts_at, ends_at=ends_at, reason=reason,
                created_by=created_by, created_at=now)).inserted_primary_key[0]
            return _window(conn.execute(sa.select(maintenance_windows)
                                        .where(maintenance_windows.c.id == window_id)).one())

    def windows(self, now: float, include_past: bool = False) -> list[Window]:
        """Windows active now or to come, in start order (with `include_past`, the finished ones too)."""
        query = sa.select(maintenance_windows).order_by(maintenance_windows.c.starts_at, maintenance_windows.c.id)
        if not include_past:
            query = query.where(*_not_over(now))
        with reading(self._engine) as conn:
            return [_window(row) for row in conn.execute(query).all()]

    def window(self, window_id: int) -> Window | None:
        with reading(self._engine) as conn:
            row = conn.execute(sa.select(maintenance_windows).where(maintenance_windows.c.id == window_id)).first()
        return None if row is None else _window(row)

    def end(self, window_id: int, now: float) -> Window | None:
        """End the window now (a window not started yet is cancelled); None if there is no such window.
        The escalations a window paused are due now (the engine resumes those no other window holds).

        A window already over is returned unchanged: the caller tells the user so.
        """
        with self._engine.begin() as conn:
            ended = conn.execute(maintenance_windows.update().where(maintenance_windows.c.id == window_id,
                                                                    *_not_over(now)).values(ended_at=now)).rowcount
            if ended:
                Escalations(self._engine).paused_due_now(conn, now)
            row = conn.execute(sa.select(maintenance_windows).where(maintenance_windows.c.id == window_id)).first()
        return None if row is None else _window(row)

    def active_for(self, labels: dict[str, str], now: float, conn: sa.Connection | None = None) -> Window | None:
        """The first window active at `now` whose matchers all match `labels`, else None (read on `conn`,
        the caller's transaction, if given)."""
        if conn is None:
            with reading(self._engine) as own:
                return self.active_for(labels, now, own)
        # asked on every escalation step and page: a statement made once (`Prepared`)
        rows = [_Row(*values) for values in _ACTIVE.rows(conn, {"b_now": now})]
        return next((window for window in map(_window, rows) if window.matches(labels)), None)


def _not_over(now: float) -> tuple:
    """Conditions of a window that has not ended by `now`."""
    return (maintenance_windows.c.ends_at > now,
            sa.or_(maintenance_windows.c.ended_at.is_(None), maintenance_windows.c.ended_at > now))


_NOW = sa.bindparam("b_now", type_=sa.Float)
_ACTIVE = Prepared(sa.select(*maintenance_windows.c).where(maintenance_windows.c.starts_at <= _NOW, *_not_over(_NOW))
                   .order_by(maintenance_windows.c.id))
_Row = namedtuple("_Row", [column.key for column in maintenance_windows.c])


def _window(row) -> Window:
    return Window(row.id, json.loads(row.matchers), row.starts_at, row.ends_at, row.reason, row.created_by,
                  row.created_at, row.ended_at)
