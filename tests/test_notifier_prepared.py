"""Statements made once (notifier/store/prepared.py): the same rows as SQLAlchemy's `execute`, inside the
caller's transaction, driver errors as SQLAlchemy's, on SQLite and PostgreSQL."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from vigil.notifier.schema import incidents
from vigil.notifier.store import Store
from vigil.notifier.store.prepared import Prepared, release, rollback_to, savepoint

NEW = Prepared(incidents.insert().returning(incidents.c.id), ["group_key", "status", "opened_at", "labels", "title"])
# a value written into the statement ("firing") travels as a parameter too
FIRING_OF_GROUP = Prepared(sa.select(incidents.c.id, incidents.c.title)
                           .where(incidents.c.group_key == sa.bindparam("group"), incidents.c.status == "firing")
                           .order_by(incidents.c.id))


@pytest.fixture
def store(db_url):
    opened = Store(db_url)
    yield opened
    opened.close()


def row(group: str, status: str = "firing", title: str = "t") -> dict:
    return dict(group_key=group, status=status, opened_at=1.0, labels="{}", title=title)


def test_rows_match_what_sqlalchemy_reads_and_roll_back_with_the_transaction(store):
    with store.engine.begin() as conn:
        first = NEW.first(conn, row("g", title="one"))[0]
        NEW.many(conn, [row("g", "resolved"), row("h", title="other")])
        assert FIRING_OF_GROUP.rows(conn, {"group": "g"}) == [(first, "one")]
        seen = conn.execute(sa.select(incidents.c.id, incidents.c.title).where(incidents.c.group_key == "g",
                                                                               incidents.c.status == "firing"))
        assert [tuple(r) for r in seen] == [(first, "one")]
        assert FIRING_OF_GROUP.first(conn, {"group": "nobody"}) is None
    with pytest.raises(RuntimeError):
        with store.engine.begin() as conn:
            NEW.execute(conn, row("rolled-back"))
            raise RuntimeError("abort")
    with store.engine.begin() as conn:
        assert FIRING_OF_GROUP.rows(conn, {"group": "rolled-back"}) == []


def test_a_driver_error_is_sqlalchemys_and_a_savepoint_undoes_only_its_part(store):
    with store.engine.begin() as conn:
        NEW.execute(conn, row("g"))
        savepoint(conn, "member")
        NEW.execute(conn, row("kept-out"))
        with pytest.raises(sa.exc.IntegrityError):  # a second firing incident of one group: unique index
            NEW.execute(conn, row("g"))
        rollback_to(conn, "member")
        savepoint(conn, "member")
        NEW.execute(conn, row("h"))
        release(conn, "member")
    with store.engine.begin() as conn:
        groups = conn.execute(sa.select(incidents.c.group_key).order_by(incidents.c.id)).scalars().all()
    assert groups == ["g", "h"]


def test_count_says_how_many_rows_an_update_changed(store):
    retitle = Prepared(incidents.update().where(incidents.c.group_key == sa.bindparam("b_group")), ["title"])
    with store.engine.begin() as conn:
        NEW.many(conn, [row("g", "resolved"), row("g", "resolved"), row("h")])
        assert retitle.count(conn, {"b_group": "g", "title": "new"}) == 2
        assert retitle.count(conn, {"b_group": "nobody", "title": "x"}) == 0
        titles = conn.execute(sa.select(incidents.c.title).where(incidents.c.group_key == "g")).scalars().all()
        assert titles == ["new", "new"]
