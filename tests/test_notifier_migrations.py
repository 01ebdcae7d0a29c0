"""Schema migrations of the notifier database, each on SQLite and on a real PostgreSQL server.

A database left by vigil 0.1.0 (built from the DDL its `create_all` ran, frozen in tests/golden) keeps
every row through `vigil notifier migrate` and is served by the notifier afterwards; a fresh database gets
the newest schema; the newest revision is exactly what notifier/schema.py declares; a revision written
by the helper for a future schema change upgrades an old database without loss; a database from a newer
vigil, or with tables that are not vigil's, is refused with a clear message.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from click.testing import CliRunner
from fastapi.testclient import TestClient

from vigil.cli import main
from vigil.notifier.app import create_app
from vigil.notifier.migrate import MIGRATIONS, SchemaError, current_revision, head_revision, upgrade_database
from vigil.notifier.migrations.new_revision import next_revision_id, write_revision
from vigil.notifier.schema import metadata
from vigil.notifier.store import Store, engine_for
from vigil.oncall.loader import parse_oncall
from stack_support import vigil
from test_notifier_support import AUTH, INBOX_ONLY, alert, make_settings, payload

LEGACY_DDL = Path(__file__).parent / "golden" / "notifier-0.1.0"
GROUP = '{}:{alertname="GpuLost"}'
LABELS = json.dumps({"alertname": "GpuLost", "gpu": "0", "node": "node-1", "severity": "critical"}, sort_keys=True)


@pytest.fixture
def engines():
    """engines(url) -> a store engine for `url`, disposed after the test."""
    opened = []

    def open_engine(url: str) -> sa.Engine:
        opened.append(engine_for(url))
        return opened[-1]

    yield open_engine
    for engine in opened:
        engine.dispose()


def create_legacy_database(engine: sa.Engine) -> None:
    """The tables as vigil 0.1.0 created them: its `create_all` DDL for this database, no alembic_version."""
    script = (LEGACY_DDL / f"{engine.dialect.name}.sql").read_text()
    with engine.begin() as conn:
        for statement in script.split(";\n"):
            sql = "\n".join(line for line in statement.splitlines() if not line.startswith("--")).strip()
            if sql:
                conn.exec_driver_sql(sql)


def old_rows() -> dict[str, list[dict]]:
    """Rows in every table, as vigil 0.1.0's store wrote them (ids assigned by the database: 1, 2, …)."""
    firing, resolved = payload(alert("fp-1")), payload(alert("fp-1", status="resolved"))
    return {
        "incidents": [
            dict(group_key=GROUP, status="resolved", opened_at=1795377600.123456, resolved_at=1795377900.5,
                 labels=LABELS, title=GROUP),
            dict(group_key="reconciled:fp-2", status="firing", opened_at=1795378000.25, resolved_at=None,
                 labels=LABELS, title="Ünïcödé ✓ — GPU 0"),
        ],
        "incident_alerts": [dict(incident_id=1, alert_key="fp-1@2026-11-21T20:00:00.123456789Z"),
                            dict(incident_id=2, alert_key="fp-2@2026-11-21T20:06:40Z")],
        "notifications": [
            dict(dedup_key="a" * 64, received_at=1795377601.0, group_key=GROUP, status="firing", receiver="vigil",
                 incident_id=1, payload=json.dumps(firing)),
            dict(dedup_key="b" * 64, received_at=1795377900.5, group_key=GROUP, status="resolved", receiver="vigil",
                 incident_id=1, payload=json.dumps(resolved)),
        ],
        "deliveries": [
            dict(notification_id=1, incident_id=1, target="demo-dri", channel_index=0, channel_type="inbox",
                 page_status="firing", title="[firing] #1", body="GPU fell off the bus", state="sent", attempts=2,
                 next_attempt_at=1795377603.0, created_at=1795377601.0, sent_at=1795377603.0, last_error=None),
            dict(notification_id=2, incident_id=1, target="demo-dri", channel_index=1, channel_type="json",
                 page_status="resolved", title="[resolved] #1", body="", state="failed", attempts=5,
                 next_attempt_at=1795378000.0, created_at=1795377900.5, sent_at=None, last_error="HTTP 500"),
        ],
        "delivery_attempts": [
            dict(delivery_id=1, at=1795377602.0, ok=False, error="HTTP 500", duration_s=0.25),
            dict(delivery_id=1, at=1795377603.0, ok=True, error=None, duration_s=0.125),
            dict(delivery_id=2, at=1795378000.0, ok=False, error="timed out", duration_s=10.0),
        ],
        "inbox_pages": [
            dict(delivery_id=1, time=1795377603.0, recipient="demo-dri", channel="inbox", title="[firing] #1",
                 body="GPU fell off the bus", incident_id=1, status="firing", labels=LABELS),
            dict(delivery_id=None, time=1795377700.0, recipient="demo-dri", channel="inbox", title="sent by hand",
                 body="x" * 5000, incident_id=None, status="firing", labels="{}"),
        ],
    }


def fill(engine: sa.Engine, rows: dict[str, list[dict]]) -> None:
    tables = sa.MetaData()
    tables.reflect(engine)
    with engine.begin() as conn:
        for name, table_rows in rows.items():
            conn.execute(tables.tables[name].insert(), table_rows)


def snapshot(engine: sa.Engine) -> dict[str, list[dict]]:
    """Every row of every table but alembic_version, ordered by primary key."""
    tables = sa.MetaData()
    tables.reflect(engine)
    with engine.connect() as conn:
        return {name: [dict(row._mapping) for row in conn.execute(sa.select(table).order_by(*table.primary_key))]
                for name, table in tables.tables.items() if name != "alembic_version"}


def as_before(after: dict[str, list[dict]], before: dict[str, list[dict]]) -> dict[str, list[dict]]:
    """`after` cut to the tables and columns `before` had (later revisions may add some)."""
    return {name: [{key: row[key] for key in rows[0]} for row in after[name]] for name, rows in before.items()}


def schema_differences(engine: sa.Engine, target: sa.MetaData) -> list:
    with engine.connect() as conn:
        return compare_metadata(MigrationContext.configure(conn), target)


def migrate(*args: str):
    return CliRunner().invoke(main, ["notifier", "migrate", *args])


def test_an_old_database_keeps_every_row_and_the_notifier_serves_it(db_url, engines, tmp_path):
    old = engines(db_url)
    create_legacy_database(old)
    fill(old, old_rows())
    before = snapshot(old)
    assert {name: len(rows) for name, rows in before.items()} == {name: len(rows) for name, rows in old_rows().items()}
    old.dispose()

    done = vigil("notifier", "migrate", "--db", db_url)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == (f"{db_url}: schema upgraded from none (tables of vigil 0.1.0, unversioned) "
                                   f"to {head_revision()}")
    migrated = engines(db_url)
    assert as_before(snapshot(migrated), before) == before
    assert current_revision(migrated) == head_revision()
    assert schema_differences(migrated, metadata) == []

    app = create_app(make_settings(tmp_path, db_url=db_url), parse_oncall(INBOX_ONLY), run_worker=False)
    with TestClient(app) as client:
        incidents = client.get("/api/v1/incidents", headers=AUTH).json()["incidents"]
        assert [(i["id"], i["status"], i["opened_at"], i["resolved_at"]) for i in incidents] == [
            (1, "resolved", "2026-11-22T20:00:00.123Z", "2026-11-22T20:05:00.500Z"),
            (2, "firing", "2026-11-22T20:06:40.250Z", None)]
        assert incidents[0]["labels"]["node"] == "node-1"
        notifications = client.get("/api/v1/notifications", headers=AUTH).json()["notifications"]
        assert [(n["id"], n["status"], n["alerts"][0]["fingerprint"]) for n in notifications] == [
            (1, "firing", "fp-1"), (2, "resolved", "fp-1")]
        pages = client.get("/api/v1/inbox", headers=AUTH).json()["pages"]
        assert [(p["id"], p["incident_id"], len(p["body"])) for p in pages] == [(1, 1, 20), (2, None, 5000)]
        # and goes on writing: new rows take the next ids (PostgreSQL's sequences survived)
        new_group = payload(alert("fp-9", node="node-9"), group_key='{}:{alertname="GpuHot"}')
        stored = client.post("/api/v1/alerts/alertmanager", json=new_group, headers=AUTH).json()
        assert (stored["incident_id"], stored["notification_id"]) == (3, 3)


def test_a_fresh_database_gets_the_newest_schema_and_a_second_run_changes_nothing(db_url, engines):
    first = migrate("--db", db_url)
    assert first.exit_code == 0, first.output
    assert first.stdout == f"{db_url}: schema upgraded from none (empty database) to {head_revision()}\n"
    second = migrate("--db", db_url)
    assert second.stdout == f"{db_url}: schema at {head_revision()}: up to date, nothing to do\n"
    engine = engines(db_url)
    assert set(snapshot(engine)) == set(metadata.tables)
    with engine.connect() as conn:
        assert conn.exec_driver_sql("SELECT version_num FROM alembic_version").scalars().all() == [head_revision()]


def test_the_newest_revision_is_what_schema_py_declares(db_url, engines):
    engine = engines(db_url)
    upgrade_database(engine)
    assert schema_differences(engine, metadata) == [], (
        "notifier/schema.py differs from the newest migration: "
        "write one with `python -m vigil.notifier.migrations.new_revision MESSAGE`")


def test_check_reports_a_pending_upgrade_and_changes_nothing(db_url, engines):
    create_legacy_database(engines(db_url))
    pending = migrate("--db", db_url, "--check")
    assert pending.exit_code == 1
    assert pending.stdout == (f"{db_url}: schema at none (tables of vigil 0.1.0, unversioned), newest "
                              f"{head_revision()}: upgrade pending: run `vigil notifier migrate --db {db_url}`\n")
    assert "alembic_version" not in sa.inspect(engines(db_url)).get_table_names()
    assert migrate("--db", db_url).exit_code == 0
    done = migrate("--db", db_url, "--check")
    assert (done.exit_code, done.stdout) == (0, f"{db_url}: schema at {head_revision()}, newest {head_revision()}: "
                                                "up to date\n")


def test_check_creates_no_sqlite_file(tmp_path):
    result = migrate("--db", f"sqlite:///{tmp_path / 'typo.db'}", "--check")
    assert result.exit_code == 1 and "no database file at" in result.output
    assert list(tmp_path.iterdir()) == []


def test_a_database_from_a_newer_vigil_is_refused_clearly(db_url, engines):
    engine = engines(db_url)
    upgrade_database(engine)
    with engine.begin() as conn:
        conn.exec_driver_sql("UPDATE alembic_version SET version_num = '9999'")
    with_password = db_url.replace("postgres@", "postgres:hunter2@")  # trust auth ignores it
    for args in (["--db", with_password], ["--db", with_password, "--check"]):
        refused = vigil("notifier", "migrate", *args)
        assert refused.returncode == 1
        assert refused.stderr.startswith("Error: cannot migrate --db ")
        assert "schema revision '9999', which this vigil does not know" in refused.stderr
        assert "Traceback" not in refused.stderr and "hunter2" not in refused.stderr
    with pytest.raises(SchemaError, match="9999"):
        Store(db_url)
    assert current_revision(engine) == "9999"


def test_unversioned_tables_unlike_vigil_0_1_0_are_left_untouched(db_url, engines):
    engine = engines(db_url)
    create_legacy_database(engine)
    with engine.begin() as conn:
        conn.exec_driver_sql("DROP TABLE delivery_attempts")
        conn.exec_driver_sql("ALTER TABLE incidents ADD COLUMN owner TEXT")
    refused = migrate("--db", db_url)
    assert refused.exit_code == 1
    assert "not those vigil 0.1.0 created (table delivery_attempts is missing; table incidents lacks " \
           "columns [] and has unknown ones ['owner']): left untouched" in refused.output
    assert "alembic_version" not in sa.inspect(engine).get_table_names()


def test_someone_elses_tables_are_no_obstacle(db_url, engines):
    engine = engines(db_url)
    with engine.begin() as conn:
        conn.exec_driver_sql("CREATE TABLE their_table (id INTEGER PRIMARY KEY)")
    state, now = upgrade_database(engine)
    assert (state.current, state.unversioned, now) == (None, False, head_revision())
    assert set(sa.inspect(engine).get_table_names()) == {*metadata.tables, "their_table", "alembic_version"}


# a notifier process up to the point where it opens its store, then waiting for the go
STARTING_NOTIFIER = """
import sys
from vigil.notifier.migrate import upgrade_database
from vigil.notifier.store import engine_for
engine = engine_for(sys.argv[1])
print("ready", flush=True)
sys.stdin.readline()
print(upgrade_database(engine)[0].describe_current(), flush=True)
"""


def test_two_notifiers_starting_at_once_migrate_the_database_once(db_url, engines):
    # the database exists (SQLite: already in WAL mode): this is about the schema upgrade's lock, not about
    # two connections switching a brand-new SQLite file to WAL at the same instant
    engines(db_url).connect().close()
    processes = [subprocess.Popen([sys.executable, "-P", "-c", STARTING_NOTIFIER, db_url], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    try:
        assert [process.stdout.readline() for process in processes] == ["ready\n"] * 2
        for process in processes:  # both go at once: only the database's lock orders them
            process.stdin.write("go\n")
            process.stdin.flush()
        results = [process.communicate(timeout=60) for process in processes]
    finally:
        for process in processes:
            process.kill()
    assert [process.returncode for process in processes] == [0, 0], [err[-2000:] for _, err in results]
    assert sorted(out for out, _ in results) == [f"{head_revision()}\n", "none (empty database)\n"]
    with engines(db_url).connect() as conn:
        assert conn.exec_driver_sql("SELECT version_num FROM alembic_version").scalars().all() == [head_revision()]


def next_schema(tier_fk_name: str | None) -> sa.MetaData:
    """schema.py's tables plus what a next release might add: a table, and columns referring to it."""
    target = sa.MetaData()
    for table in metadata.sorted_tables:
        table.to_metadata(target)
    sa.Table("test_only_tiers", target, sa.Column("id", sa.Integer, primary_key=True),
             sa.Column("name", sa.Text, nullable=False))
    deliveries = target.tables["deliveries"]
    deliveries.append_column(sa.Column("test_only_tier_id", sa.Integer,
                                       sa.ForeignKey("test_only_tiers.id", name=tier_fk_name)))
    deliveries.append_column(sa.Column("test_only_level", sa.Integer, nullable=False, server_default="0"))
    return target


def test_a_revision_written_by_the_helper_upgrades_an_old_database_without_loss(db_url, engines, tmp_path):
    migrations = tmp_path / "migrations"
    shutil.copytree(MIGRATIONS, migrations, ignore=shutil.ignore_patterns("__pycache__"))
    with pytest.raises(ValueError, match=r"name the new constraint\(s\) on deliveries\(test_only_tier_id\)"):
        write_revision("add tiers", next_schema(tier_fk_name=None), migrations)
    revision_id = next_revision_id(migrations)
    written = write_revision("add tiers", next_schema("fk_deliveries_test_only_tier"), migrations)
    assert written.name == f"{revision_id}_add_tiers.py"
    assert write_revision("again", next_schema("fk_deliveries_test_only_tier"), migrations) is None

    engine = engines(db_url)
    create_legacy_database(engine)
    fill(engine, old_rows())
    before = snapshot(engine)
    # on SQLite the new foreign key rebuilds `deliveries`, which delivery_attempts and inbox_pages refer to
    state, now = upgrade_database(engine, migrations)
    assert (state.unversioned, now) == (True, revision_id)
    after = snapshot(engine)
    assert as_before(after, before) == before
    assert {(row["test_only_tier_id"], row["test_only_level"]) for row in after["deliveries"]} == {(None, 0)}
    assert schema_differences(engine, next_schema("fk_deliveries_test_only_tier")) == []


def test_revision_0002_gives_old_rows_the_engine_columns_and_takes_escalation_pages(db_url, engines):
    engine = engines(db_url)
    create_legacy_database(engine)
    fill(engine, old_rows())
    upgrade_database(engine)
    after = snapshot(engine)
    assert [(i["reopened"], i["priority"], i["acknowledged_at"]) for i in after["incidents"]] == [(0, None, None)] * 2
    assert {(d["tier"], d["page_key"], d["digest_of"]) for d in after["deliveries"]} == {(None, None, None)}
    assert after["escalations"] == after["incident_events"] == after["maintenance_windows"] == []
    escalation_page = dict(notification_id=None, incident_id=2, target="alice", channel_index=0, channel_type="phone",
                           page_status="firing", title="t", body="b", state="pending", attempts=0,
                           next_attempt_at=1.0, created_at=1.0, tier=0, page_key="2/0/0/0/alice/0", contact="phone")
    fill(engine, {"deliveries": [escalation_page]})
    with pytest.raises(sa.exc.IntegrityError):  # one page per key, whoever enqueues it
        fill(engine, {"deliveries": [escalation_page]})
    with pytest.raises(sa.exc.IntegrityError):  # the old key survived the rebuild of `deliveries`
        fill(engine, {"deliveries": [{**old_rows()["deliveries"][0], "state": "pending"}]})
