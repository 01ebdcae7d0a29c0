"""One SQLAlchemy engine for a database URL: SQLite (WAL, full sync) or PostgreSQL (psycopg 3)."""

from __future__ import annotations

import threading

import sqlalchemy as sa

from vigil.notifier.store.prepared import on_cursor

READ_ONLY = "vigil_read_only"
_GATE = "vigil_write_gate"
GATE_WAIT_S = 30.0  # as long as SQLite's busy timeout; past it, the BEGIN waits in SQLite as without the gate
# Connections kept open: the delivery worker's 16 senders, the webhook's request threads, the engine's
# loops and the console all hold one at once under a storm. SQLAlchemy's default pool keeps 5 and opens
# and closes the rest on every use: under paging that churn took 6 % of the notifier's CPU samples.
POOL = {"pool_size": 32, "max_overflow": 32}
POSTGRES_POOL = {"pool_size": 20, "max_overflow": 20}  # each one is a server process: fewer kept


def engine_for(url: str) -> sa.Engine:
    """An engine for `url`; SQLite gets WAL, full sync, a busy timeout and write-locking BEGINs."""
    if url.startswith("postgresql://"):
        return sa.create_engine("postgresql+psycopg://" + url.removeprefix("postgresql://"), **POSTGRES_POOL)
    if not url.startswith("sqlite"):
        return sa.create_engine(url)
    in_memory = url in ("sqlite://", "sqlite:///:memory:")  # one connection is the database: its own pool
    engine = sa.create_engine(url, connect_args={"timeout": 30, "check_same_thread": False},
                              **({} if in_memory else POOL))

    @sa.event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection, _record):
        dbapi_connection.isolation_level = None  # let SQLAlchemy's BEGIN below drive transactions
        for pragma in ("journal_mode=WAL", "synchronous=FULL", "foreign_keys=ON", "busy_timeout=30000"):
            dbapi_connection.execute(f"PRAGMA {pragma}")

    # This process's writers queue here, each woken the moment the one before it ends. Without it they
    # queue in SQLite's busy handler, which sleeps up to 100 ms between looks at the lock: a writer that
    # writes back to back (the webhook's group commit) takes the lock again and again in between, and
    # the outbox worker's BEGIN waited up to seconds.
    gate = threading.Lock()

    @sa.event.listens_for(engine, "begin")
    def _on_begin(connection):
        # IMMEDIATE takes the write lock up front: two writers serialize instead of failing mid-way.
        # Reads (`reading`) begin deferred: in WAL they never wait for, nor hold up, a writer.
        # On the driver's cursor: `exec_driver_sql` costs about 26 us more per transaction (events and
        # result wrapping for a statement that returns nothing)
        if connection.get_execution_options().get(READ_ONLY, False):
            on_cursor(connection, "BEGIN")
            return
        connection.info[_GATE] = gate.acquire(timeout=GATE_WAIT_S)
        try:
            on_cursor(connection, "BEGIN IMMEDIATE")
        except BaseException:
            _open_gate(connection)
            raise

    def _open_gate(connection, *_args):
        if connection.info.pop(_GATE, False):
            gate.release()

    # (just before the COMMIT / ROLLBACK runs: the next writer's BEGIN finds the lock free a moment later)
    sa.event.listen(engine, "commit", _open_gate)
    sa.event.listen(engine, "rollback", _open_gate)
    return engine


def reading(engine: sa.Engine) -> sa.Connection:
    """A connection for reads only (`with reading(engine) as conn:`); on SQLite it takes no write lock."""
    return engine.connect().execution_options(**{READ_ONLY: True})
