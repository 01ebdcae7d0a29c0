"""Bring a notifier database to the schema this vigil expects: Alembic revisions in `migrations/versions/`.

Everything happens in one transaction under a lock, so two notifiers starting at once on one database
migrate it once and a failed revision leaves the database as it was: on PostgreSQL a transaction-level
advisory lock, on SQLite the write lock (the store's engine begins with BEGIN IMMEDIATE; use
`store.engine_for`). A database made by vigil 0.1.0 (tables from `create_all`, no `alembic_version`) is
checked against revision 0001 and stamped with it. A database at a revision this vigil does not know
(upgraded by a newer vigil) is refused with `SchemaError`.
"""

from __future__ import annotations

import logging
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import sqlalchemy as sa
from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory

MIGRATIONS = Path(__file__).parent / "migrations"
BASELINE = "0001"  # the schema vigil 0.1.0 created without Alembic
VERSION_TABLE = "alembic_version"
# any fixed 64-bit number, the same in every vigil: the notifiers sharing a PostgreSQL database queue on it
PG_LOCK_KEY = 0x7669_6769_6C5F_6462  # "vigil_db"
# Alembic runs a revision through module-level proxies (`alembic.op`, `alembic.context`): one run at a
# time per process, whatever the engine
_ALEMBIC_RUN = threading.Lock()

log = logging.getLogger(__name__)


class SchemaError(Exception):
    """The database cannot be brought to this vigil's schema; the message says why."""


@dataclass(frozen=True)
class SchemaState:
    current: str | None  # the revision recorded in the database; None: none recorded
    head: str  # the newest revision this vigil knows
    unversioned: bool = False  # vigil 0.1.0's tables without a recorded revision

    @property
    def up_to_date(self) -> bool:
        return self.current == self.head

    def describe_current(self) -> str:
        if self.current is not None:
            return self.current
        return "none (tables of vigil 0.1.0, unversioned)" if self.unversioned else "none (empty database)"


def alembic_config(migrations: Path = MIGRATIONS, **attributes) -> Config:
    """Alembic's configuration, in code (no alembic.ini); `attributes` reach env.py (`connection`, …)."""
    config = Config()
    config.set_main_option("script_location", str(migrations).replace("%", "%%"))
    config.set_main_option("path_separator", "os")
    config.attributes.update(attributes)
    return config


def head_revision(migrations: Path = MIGRATIONS) -> str:
    return ScriptDirectory.from_config(alembic_config(migrations)).get_current_head()


def current_revision(engine: sa.Engine) -> str | None:
    """The revision recorded in the database (None for an empty or unversioned one)."""
    with engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()


def schema_state(engine: sa.Engine, migrations: Path = MIGRATIONS) -> SchemaState:
    """Where the database stands against this vigil's revisions; SchemaError for an unknown revision."""
    script = ScriptDirectory.from_config(alembic_config(migrations))
    with engine.connect() as conn:
        return _state(conn, script, migrations)


def upgrade_database(engine: sa.Engine, migrations: Path = MIGRATIONS) -> tuple[SchemaState, str]:
    """Upgrade the database to the newest revision; (the state found, the revision it is at now)."""
    script = ScriptDirectory.from_config(alembic_config(migrations))
    with engine.connect() as conn, _sqlite_foreign_keys_off(conn), conn.begin():
        _lock(conn)
        state = _state(conn, script, migrations)
        if state.up_to_date:
            return state, state.head
        with _ALEMBIC_RUN:
            if state.unversioned:
                command.stamp(alembic_config(migrations, connection=conn), BASELINE)
            command.upgrade(alembic_config(migrations, connection=conn), "head")
        _check_foreign_keys(conn)
    log.info("notifier database schema upgraded from %s to %s", state.describe_current(), state.head)
    return state, state.head


def _lock(conn: sa.Connection) -> None:
    if conn.dialect.name == "postgresql":
        conn.execute(sa.text("SELECT pg_advisory_xact_lock(:key)"), {"key": PG_LOCK_KEY})


def _state(conn: sa.Connection, script: ScriptDirectory, migrations: Path) -> SchemaState:
    head = script.get_current_head()
    current = MigrationContext.configure(conn).get_current_revision()
    if current is not None:
        if current not in {revision.revision for revision in script.walk_revisions()}:
            raise SchemaError(f"the database is at schema revision {current!r}, which this vigil does not know "
                              f"(its newest is {head!r}): a newer vigil upgraded it; run that version or newer")
        return SchemaState(current, head)
    tables = set(sa.inspect(conn).get_table_names()) - {VERSION_TABLE}
    if not tables:
        return SchemaState(None, head)
    baseline = _baseline_columns(migrations)
    if not tables & baseline.keys():
        return SchemaState(None, head)  # someone else's tables only: ours go beside them
    _check_baseline(conn, baseline)
    return SchemaState(None, head, unversioned=True)


def _baseline_columns(migrations: Path) -> dict[str, set[str]]:
    """Table -> column names of revision BASELINE, built in a scratch in-memory SQLite database."""
    scratch = sa.create_engine("sqlite://")
    try:
        with scratch.begin() as conn, _ALEMBIC_RUN:
            command.upgrade(alembic_config(migrations, connection=conn), BASELINE)
            return _columns(conn)
    finally:
        scratch.dispose()


def _columns(conn: sa.Connection) -> dict[str, set[str]]:
    inspector = sa.inspect(conn)
    return {table: {column["name"] for column in inspector.get_columns(table)}
            for table in inspector.get_table_names() if table != VERSION_TABLE}


def _check_baseline(conn: sa.Connection, baseline: dict[str, set[str]]) -> None:
    found = {table: columns for table, columns in _columns(conn).items() if table in baseline}
    problems = [f"table {table} is missing" for table in sorted(baseline.keys() - found.keys())]
    for table in sorted(found):
        missing, extra = baseline[table] - found[table], found[table] - baseline[table]
        if missing or extra:
            problems.append(f"table {table} lacks columns {sorted(missing)} and has unknown ones {sorted(extra)}")
    if problems:
        raise SchemaError("the database holds notifier tables but no schema revision, and they are not those "
                          "vigil 0.1.0 created (" + "; ".join(problems) + "): left untouched")


@contextmanager
def _sqlite_foreign_keys_off(conn: sa.Connection):
    """On SQLite, foreign keys off while revisions run (a batch ALTER copies and drops referenced tables).

    The pragma cannot change inside a transaction, so it goes to the driver before BEGIN; the keys are
    checked before COMMIT instead (`_check_foreign_keys`).
    """
    if conn.dialect.name != "sqlite":
        yield
        return
    driver = conn.connection.dbapi_connection
    enabled = driver.execute("PRAGMA foreign_keys").fetchone()[0]
    driver.execute("PRAGMA foreign_keys=OFF")
    try:
        yield
    finally:
        driver.execute(f"PRAGMA foreign_keys={'ON' if enabled else 'OFF'}")


def _check_foreign_keys(conn: sa.Connection) -> None:
    if conn.dialect.name != "sqlite":
        return  # PostgreSQL checks them statement by statement
    broken = conn.exec_driver_sql("PRAGMA foreign_key_check").all()
    if broken:
        tables = sorted({row[0] for row in broken})
        raise SchemaError(f"the upgrade would leave {len(broken)} row(s) whose foreign key points nowhere "
                          f"(tables {', '.join(tables)}): rolled back, the database is unchanged")
