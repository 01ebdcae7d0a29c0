"""The escalation loop's batches, on SQLite and PostgreSQL: many steps due at once are each run once
(one batch transaction holds many), two engines on one database page each step once, and a step that
fails is rolled back alone and stays due while the rest of its batch is paged."""

from __future__ import annotations

import threading

import pytest

from sim_clock import SIM_NOW
from vigil.notifier.ingest.group_commit import ingest_alone
from vigil.notifier.engine.escalation import EngineIntake
from vigil.notifier.engine.escalation_loop import BATCH, EscalationEngine
from vigil.notifier.metrics import NotifierMetrics
from vigil.notifier.core.models import WebhookPayload
from vigil.notifier.store import Store
from vigil.oncall.loader import parse_oncall
from test_notifier_support import alert, fail_the_next_commit, payload

ONCALL = """
people:
  alice: {contacts: {phone: {inbox: true, kind: phone}}}
  bob:   {contacts: {phone: {inbox: true, kind: phone}}}
policies:
  rota:
    tiers:
      - {name: DRI, notify: [{person: alice}], escalate_after: 5m}
      - {name: senior, notify: [{person: bob}], escalate_after: 1h}
default_policy: rota
"""
START = SIM_NOW
WAIT_S = 300


def open_incidents(store: Store, count: int) -> list[int]:
    oncall = parse_oncall(ONCALL)
    route = EngineIntake(oncall, None, NotifierMetrics())
    return [ingest_alone(store.notifications, WebhookPayload.model_validate(payload(alert(f"fp-{i}"), group_key=f"g{i}")),
                                       START + i * 0.001, route).incident_id for i in range(count)]


def senior_pages(store: Store, incidents: list[int]) -> dict[int, int]:
    """Incident -> how many tier-2 pages it has."""
    return {i: sum(1 for p in store.outbox.pages_of(i) if p["tier"] == 1) for i in incidents}


def tier_paged(store: Store, incident: int) -> list[int]:
    return [e["detail"]["tier"] for e in store.timeline.of(incident) if e["kind"] == "tier_paged"]


def test_more_steps_due_than_a_batch_are_each_paged_once_in_one_pass(db_url):
    store = Store(db_url)
    try:
        incidents = open_incidents(store, BATCH + 30)
        engine = EscalationEngine(store, parse_oncall(ONCALL), lambda: START + WAIT_S + 1)
        assert engine.run_once() == BATCH + 30  # one page each (bob's phone), counted on both databases
        assert engine.run_once() == 0
        assert set(senior_pages(store, incidents).values()) == {1}
        assert all(tier_paged(store, i) == [0, 1] for i in incidents)
        assert store.escalations.pending_count() == 0  # the last tier was paged: the policy is exhausted
    finally:
        store.close()


def test_two_engines_on_one_postgresql_page_each_due_step_once(postgres_server, tmp_path):
    db = f"{postgres_server}/postgres"
    stores = [Store(db), Store(db)]
    try:
        incidents = open_incidents(stores[0], 2 * BATCH + 10)
        engines = [EscalationEngine(s, parse_oncall(ONCALL), lambda: START + WAIT_S + 1) for s in stores]
        threads = [threading.Thread(target=engine.run_once) for engine in engines]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert set(senior_pages(stores[0], incidents).values()) == {1}
        assert all(tier_paged(stores[0], i) == [0, 1] for i in incidents)
    finally:
        for store in stores:
            store.close()


def test_a_failing_step_stays_due_and_the_rest_of_its_batch_is_paged(db_url):
    store = Store(db_url)
    try:
        incidents = open_incidents(store, 5)
        broken = incidents[2]

        def links(incident_id: int, now: float, person: str | None = None) -> list[str]:
            if incident_id == broken:
                raise ValueError("link signing key unreadable")
            return []

        oncall = parse_oncall(ONCALL)
        failing = EscalationEngine(store, oncall, lambda: START + WAIT_S + 1, links=links)
        # a pass ends at the batch that held the failure; on a loaded machine the transaction budget may
        # have cut the batches before it, leaving the steps after the broken one to the next pass
        for _ in range(len(incidents)):
            try:
                failing.run_once()
                raise AssertionError("the pass should report the failed step")
            except RuntimeError as error:
                assert "1 escalation step(s) failed" in str(error)
            if sum(senior_pages(store, incidents).values()) == len(incidents) - 1:
                break
        pages = senior_pages(store, incidents)
        assert pages == {i: 0 if i == broken else 1 for i in incidents}
        assert tier_paged(store, broken) == [0]  # its timeline rows were rolled back with it
        EscalationEngine(store, oncall, lambda: START + WAIT_S + 2).run_once()
        assert set(senior_pages(store, incidents).values()) == {1}
    finally:
        store.close()


def test_an_sla_breach_is_found_within_a_poll_interval_of_passes_made_in_quick_succession(db_url):
    oncall = parse_oncall(ONCALL.replace("people:", "priorities:\n  P1: {ack_within: 1m}\npeople:", 1))
    store = Store(db_url)
    try:
        route = EngineIntake(oncall, None, NotifierMetrics())
        incident = ingest_alone(store.notifications, WebhookPayload.model_validate(payload(alert("fp"))), START,
                                              route).incident_id
        now = [START + 59.9]
        engine = EscalationEngine(store, oncall, lambda: now[0], poll_interval_s=0.5)
        passes = 0
        while store.notifications.incident(incident)["sla"]["ack"] != "breached":
            assert now[0] <= START + 60 + 0.5, "the breach was not found within a poll interval"
            engine.run_once()
            now[0] += 0.02  # a stream of due steps makes a pass every few ms
            passes += 1
        assert passes > 1 and senior_pages(store, [incident]) == {incident: 1}  # escalated at once
    finally:
        store.close()


def test_tiers_paged_in_a_batch_whose_commit_fails_are_counted_once_they_commit(db_url):
    store, metrics = Store(db_url), NotifierMetrics()
    try:
        incidents = open_incidents(store, 3)
        fail_the_next_commit(store.engine)
        engine = EscalationEngine(store, parse_oncall(ONCALL), lambda: START + WAIT_S + 1, metrics=metrics)
        with pytest.raises(RuntimeError, match="commit broke"):
            engine.run_once()
        assert metrics.registry.get_sample_value("vigil_notifier_escalations_total", {"tier": "1"}) is None
        engine.run_once()  # the steps stayed due: paged now, and counted once
        assert senior_pages(store, incidents) == {i: 1 for i in incidents}
        assert metrics.registry.get_sample_value("vigil_notifier_escalations_total", {"tier": "1"}) == 3
    finally:
        store.close()
