"""Statements made once for the webhook's hot path: a Core statement compiled once per database dialect
and run straight on the connection's DBAPI cursor.

Why: SQLAlchemy's `Connection.execute` costs about 35 µs per statement even for a statement built once
(events, execution context, result wrapper) and about 140 µs for one built per call; the DBAPI cursor
costs about 4 µs. The statement is still written in Core (one text for SQLite and PostgreSQL, compiled
by the dialect); only its execution skips SQLAlchemy, inside the caller's transaction on the same
connection. Parameters go to the driver as they are: use it for Integer, Float and Text columns, and
not for expanding `IN` lists.

A driver error comes back as SQLAlchemy's (`sqlalchemy.exc.IntegrityError` …), as with `execute`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from operator import itemgetter
from typing import Any

import sqlalchemy as sa


class Prepared:
    """`statement`, compiled on first use per dialect; `column_keys`: the columns an INSERT/UPDATE sets
    (its parameters, named as the columns), as `Compiled` takes them."""

    def __init__(self, statement: sa.Executable, column_keys: Iterable[str] | None = None):
        self._statement = statement
        self._column_keys = list(column_keys) if column_keys is not None else None
        self._compiled: dict[str, tuple[str, Callable[[Mapping], tuple] | None, dict]] = {}

    def rows(self, conn: sa.Connection, params: Mapping[str, Any] | None = None) -> list[tuple]:
        """Run it with `params`; its rows (tuples)."""
        cursor = self._run(conn, params or {}, many=False)
        return cursor.fetchall() if cursor.description else []

    def first(self, conn: sa.Connection, params: Mapping[str, Any] | None = None) -> tuple | None:
        cursor = self._run(conn, params or {}, many=False)
        return cursor.fetchone() if cursor.description else None

    def execute(self, conn: sa.Connection, params: Mapping[str, Any] | None = None) -> None:
        self._run(conn, params or {}, many=False)

    def count(self, conn: sa.Connection, params: Mapping[str, Any] | None = None) -> int:
        """Run it (an UPDATE or DELETE); how many rows it changed."""
        return self._run(conn, params or {}, many=False).rowcount

    def many(self, conn: sa.Connection, rows: list[Mapping[str, Any]]) -> None:
        """Run it once per row of `rows` (the driver's executemany)."""
        if rows:
            self._run(conn, rows, many=True)

    def _run(self, conn: sa.Connection, params, many: bool):
        sql, names, fixed = self._for(conn.dialect)
        if fixed:  # values written into the statement (`column == "firing"`) are parameters too
            params = [{**fixed, **p} for p in params] if many else {**fixed, **params}
        if names is not None:  # positional paramstyle (SQLite's qmark): `names` picks them in order
            params = [names(p) for p in params] if many else names(params)
        return on_cursor(conn, sql, params, many)

    def _for(self, dialect: sa.Dialect) -> tuple[str, Callable[[Mapping], tuple] | None, dict]:
        found = self._compiled.get(dialect.name)
        if found is None:
            compiled = self._statement.compile(dialect=dialect, column_keys=self._column_keys)
            names = _picker(compiled.positiontup) if compiled.positional else None
            fixed = {name: bind.effective_value for bind, name in compiled.bind_names.items() if not bind.required}
            found = self._compiled[dialect.name] = (compiled.string, names, fixed)
        return found


def on_cursor(conn: sa.Connection, sql: str, params=(), many: bool = False):
    """Run `sql` (with `params`, or each of them when `many`) on `conn`'s DBAPI cursor, inside its
    transaction; the cursor. A driver error comes back as SQLAlchemy's, as from `execute`."""
    cursor = conn.connection.dbapi_connection.cursor()
    try:
        if many:
            cursor.executemany(sql, params)
        else:
            cursor.execute(sql, params)
    except conn.dialect.loaded_dbapi.Error as exc:
        raise sa.exc.DBAPIError.instance(sql, params, exc, conn.dialect.loaded_dbapi.Error,
                                         dialect=conn.dialect) from exc
    return cursor


def _picker(names: list[str]) -> Callable[[Mapping], tuple]:
    """A function giving the values of `names` from a mapping, as a tuple (itemgetter: no Python loop)."""
    if len(names) == 1:
        only = names[0]
        return lambda params: (params[only],)
    return itemgetter(*names) if names else lambda params: ()


def savepoint(conn: sa.Connection, name: str) -> None:
    """`SAVEPOINT name` on `conn`'s transaction (cheaper than `begin_nested`; same SQL on both databases)."""
    conn.connection.dbapi_connection.cursor().execute(f"SAVEPOINT {name}")


def release(conn: sa.Connection, name: str) -> None:
    conn.connection.dbapi_connection.cursor().execute(f"RELEASE SAVEPOINT {name}")


def rollback_to(conn: sa.Connection, name: str) -> None:
    """Undo everything since `SAVEPOINT name` and drop it."""
    cursor = conn.connection.dbapi_connection.cursor()
    cursor.execute(f"ROLLBACK TO SAVEPOINT {name}")
    cursor.execute(f"RELEASE SAVEPOINT {name}")
