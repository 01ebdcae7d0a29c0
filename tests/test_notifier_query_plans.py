"""The statements the notifier runs on every webhook post and every page read a few rows through an index,
whatever the number of incidents: SQLite's plan for each, on a database migrated as the notifier migrates
it (SQLite has no statistics there, so a plan that looks selective may walk nearly every incident)."""

from __future__ import annotations

import pytest
from sqlalchemy.dialects import sqlite

from vigil.notifier.engine import causes
from vigil.notifier.schema import incidents
from vigil.notifier.store import Store, incident_state, notifications
from vigil.notifier.store.prepared import on_cursor

# statement, its parameters, the index its plan must search
PER_POST = {
    "held symptoms a new incident gathers": (causes._HELD, {"now": 1000.0, "cause_id": 7}, "incidents_held"),
    "symptoms joined to a cause": (causes._JOINED, {"cause_id": 7}, "incidents_of_cause"),
    "an incident's row": (incident_state._ROW, {"incident_id": 7}, "INTEGER PRIMARY KEY"),
}


@pytest.fixture
def store(tmp_path):
    opened = Store(f"sqlite:///{tmp_path / 'notifier.db'}")
    yield opened
    opened.close()


@pytest.mark.parametrize("name", sorted(PER_POST))
def test_each_statement_of_a_post_searches_an_index_instead_of_scanning_the_incidents(store, name):
    statement, params, index = PER_POST[name]
    sql, names, fixed = statement._for(sqlite.dialect())
    values = names({**fixed, **params}) if names else {**fixed, **params}
    with store.engine.connect() as conn:
        plan = [row[3] for row in on_cursor(conn, f"EXPLAIN QUERY PLAN {sql}", values).fetchall()]
    assert any(index in step for step in plan), plan
    assert not any(step.startswith("SCAN incidents") for step in plan), plan


def plan_of(store, query) -> list[str]:
    sql = str(query.compile(dialect=sqlite.dialect(), compile_kwargs={"literal_binds": True}))
    with store.engine.connect() as conn:
        return [row[3] for row in on_cursor(conn, f"EXPLAIN QUERY PLAN {sql}").fetchall()]


def test_a_symptom_looks_for_its_firing_cause_among_the_firing_incidents_only(store):
    plan = plan_of(store, causes.candidates_query(incidents.c.status == "firing", "GpuFallenOffBus", 7))
    assert plan == ["SCAN incidents USING INDEX one_firing_incident_per_group"], plan  # a partial index: firing ones


def test_the_open_faults_of_each_metrics_scrape_are_read_among_the_firing_incidents_only(store):
    plan = plan_of(store, notifications.FIRING_INCIDENTS)
    assert plan == ["SCAN incidents USING INDEX one_firing_incident_per_group"], plan


def test_a_symptom_looks_for_a_recently_resolved_cause_by_resolution_time(store):
    """With no firing cause, a symptom looks for one resolved in the last 15 minutes: through the
    resolution times (revision 0011), not by walking every incident the store has kept."""
    for began in (None, 990.0):  # a symptom that files a ticket; one that pages, its alerts begun at 990
        plan = plan_of(store, causes.candidates_query(causes.resolved_since(1000.0, began), "GpuFallenOffBus", 7))
        assert plan == ["SEARCH incidents USING INDEX incidents_resolved (resolved_at>?)"], plan
