"""One SQLAlchemy engine for a database URL: SQLite (WAL, full sync) or PostgreSQL (psycopg 3)."""

from __future__ import annotations

import sqlalchemy as sa

READ_ONLY = "vigil_read_only"


def engine_for(url: str) -> sa.Engine:
    """An engine for `url`; SQLite gets WAL, full sync, a busy timeout and write-locking BEGINs."""
    if url.startswith("postgresql://"):
        return sa.create_engine("postgresql+psycopg://" + url.removeprefix("postgresql://"))
    if not url.startswith("sqlite"):
        return sa.create_engine(url)
    engine = sa.create_engine(url, connect_args={"timeout": 30, "check_same_thread": False})

    @sa.event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection, _record):
        dbapi_connection.isolation_level = None  # let SQLAlchemy's BEGIN below drive transactions
        for pragma in ("journal_mode=WAL", "synchronous=FULL", "foreign_keys=ON", "busy_timeout=30000"):
            dbapi_connection.execute(f"PRAGMA {pragma}")

    @sa.event.listens_for(engine, "begin")
    def _on_begin(connection):
        # IMMEDIATE takes the write lock up front: two writers serialize instead of failing mid-way.
        # Reads (`reading`) begin deferred: in WAL they never wait for, nor hold up, a writer.
        read_only = connection.get_execution_options().get(READ_ONLY, False)
        connection.exec_driver_sql("BEGIN" if read_only else "BEGIN IMMEDIATE")

    return engine


def reading(engine: sa.Engine) -> sa.Connection:
    """A connection for reads only (`with reading(engine) as conn:`); on SQLite it takes no write lock."""
    return engine.connect().execution_options(**{READ_ONLY: True})
