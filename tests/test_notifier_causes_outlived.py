"""A symptom that outlives its cause's resolution, on the on-call engine's fake clock (SQLite and
PostgreSQL): it stays part of the one fault for AFTERMATH_S after the repair and pages nobody if it
resolves meanwhile; still firing then, the repair did not cure it, and it pages on its own, saying why."""

from __future__ import annotations

from vigil.common import symptoms
from vigil.notifier.engine import actions
from vigil.notifier.engine.causes import AFTERMATH_S
from vigil.notifier.incident_text import event_text

import pytest

from test_notifier_support import alert, payload
from test_oncall_engine import SATURDAY_3AM, Scenario

LOST = "GpuFallenOffBus"
START = SATURDAY_3AM


def lost(status="firing") -> dict:
    return payload(alert("lost-1-3", status=status, alertname=LOST, node="node-1", gpu="3"),
                   group_key=f'{{}}:{{alertname="{LOST}", node="node-1", gpu="3"}}')


def missing(status="firing", notify="page") -> dict:
    body = alert("missing-1", status=status, alertname="GpuMissing", node="node-1", gpu="3", notify=notify)
    body["annotations"][symptoms.ANNOTATION] = symptoms.encode(
        symptoms.SymptomOf((symptoms.Cause(LOST, ("node", "gpu")),), 60.0))
    return payload(body, group_key='{}:{alertname="GpuMissing", node="node-1"}')


@pytest.fixture
def scenario(db_url):
    opened = Scenario(db_url, START)
    yield opened
    opened.store.close()


def joined_then_cause_resolved(scenario) -> tuple[int, int]:
    cause = scenario.post(lost())
    symptom = scenario.post(missing())
    assert scenario.store.notifications.incident(symptom)["part_of"] == cause and not scenario.paged(symptom)
    scenario.at(120, START)
    scenario.post(lost(status="resolved"))
    return cause, symptom


def test_a_symptom_still_firing_after_its_cause_resolved_pages_on_its_own_once_it_outlived_it(scenario):
    cause, symptom = joined_then_cause_resolved(scenario)
    scenario.at(120 + AFTERMATH_S - 1, START)
    assert scenario.paged(symptom) == []  # not yet: it may be the fault's tail
    scenario.at(120 + AFTERMATH_S, START)
    assert scenario.paged(symptom) == [("carol", "phone", 0)]
    shown = scenario.store.notifications.incident(symptom)
    assert shown["part_of"] is None and shown["state"] == "triggered"
    events = scenario.store.timeline.of(symptom)
    assert event_text(next(e for e in events if e["kind"] == "stands_alone")) == (
        f"still firing 15m after its cause, incident #{cause}, resolved: a fault of its own now")
    paged = next(e for e in events if e["kind"] == "tier_paged")
    assert paged["detail"]["why"] == f"still firing 15m after its cause, incident #{cause}, resolved"
    # and it escalates as any page does
    scenario.at(120 + AFTERMATH_S + 300, START)
    assert scenario.paged(symptom)[1:] == [("dave", "phone", 1)]


def test_a_symptom_that_resolves_soon_after_its_cause_pages_nobody(scenario):
    cause, symptom = joined_then_cause_resolved(scenario)
    scenario.at(600, START)
    scenario.post(missing(status="resolved"))
    scenario.at(120 + AFTERMATH_S, START)
    scenario.at(120 + 2 * AFTERMATH_S, START)
    assert scenario.paged(symptom) == [] and scenario.paged(cause) == [("carol", "phone", 0)]
    assert scenario.store.escalations.pending_count() == 0


def test_a_symptom_whose_cause_fires_again_joins_it_again_and_pages_nobody(scenario):
    cause, symptom = joined_then_cause_resolved(scenario)
    scenario.at(300, START)
    again = scenario.post(lost() | {"alerts": [alert("lost-1-3", alertname=LOST, node="node-1", gpu="3",
                                                      starts="2026-11-21T03:05:00Z")]})
    scenario.at(120 + AFTERMATH_S, START)
    assert scenario.paged(symptom) == []
    assert scenario.store.notifications.incident(symptom)["part_of"] == again != cause  # joined the new one


def test_a_symptom_still_firing_when_a_person_resolves_its_cause_is_held_too(scenario):
    cause = scenario.post(lost())
    symptom = scenario.post(missing())
    actions.resolve(scenario.store, cause, "carol", START + 60)
    scenario.at(60 + AFTERMATH_S, START)
    assert scenario.paged(symptom) == [("carol", "phone", 0)]


def test_a_ticket_may_outlive_its_cause_twice_as_long_before_it_files_its_own(scenario):
    cause = scenario.post(lost())
    scenario.post(lost(status="resolved"))
    scenario.at(60, START)
    ticket = scenario.post(missing(notify="ticket"))  # the cause's aftermath (a rate outlives the fault)
    assert scenario.store.notifications.incident(ticket)["part_of"] == cause
    scenario.at(AFTERMATH_S + 60, START)
    assert scenario.paged(ticket) == []
    scenario.at(2 * AFTERMATH_S, START)
    assert [tier for _, _, tier in scenario.paged(ticket)] == [0]
