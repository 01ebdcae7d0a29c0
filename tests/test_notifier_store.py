"""The store on both databases it supports: SQLite (default) and a real PostgreSQL server
(the `db_url` fixture of tests/conftest.py: it runs when Debian's server binaries are installed and the tests run as root)."""

from __future__ import annotations

import threading

import pytest
from fastapi.testclient import TestClient

from vigil.notifier.ingest.group_commit import ingest_alone, ingest_in
from vigil.notifier.app import create_app
from vigil.notifier.core.models import WebhookPayload
from vigil.notifier.engine.escalation import EngineIntake
from vigil.notifier.store import Store
from vigil.oncall.loader import parse_oncall
from test_notifier_support import AUTH, INBOX_ONLY, alert, make_settings, payload


@pytest.fixture
def store(db_url):
    opened = Store(db_url)
    yield opened
    opened.close()


# the on-call engine's intake on a first-version file: one inbox, paged for every incident
page_everyone = EngineIntake(parse_oncall(INBOX_ONLY))


def ingest(store, body, now=1000.0):
    return ingest_alone(store.notifications, WebhookPayload.model_validate(body), now, page_everyone)


def test_incident_lifecycle_and_idempotency(store):
    first = ingest(store, payload(alert("a")))
    assert ingest(store, payload(alert("a"))).duplicate
    ingest(store, payload(alert("a", status="resolved")), now=1060.0)
    reopened = ingest(store, payload(alert("a", starts="2026-11-21T21:00:00Z")), now=1100.0)
    incidents = store.notifications.list_incidents(10)
    assert [(i["id"], i["status"]) for i in incidents] == [(first.incident_id, "resolved"),
                                                            (reopened.incident_id, "firing")]
    assert incidents[0]["resolved_at"] == "1970-01-01T00:17:40.000Z"
    assert len(store.notifications.list_notifications(10)) == 3
    assert store.outbox.states() == {"pending": 3}


def test_the_same_notification_from_many_threads_is_stored_once(store):
    results, body = [], payload(alert("a"), alert("b", node="node-2"))
    threads = [threading.Thread(target=lambda: results.append(ingest(store, body))) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(r.duplicate for r in results) == [False] + [True] * 5
    assert len(store.notifications.list_notifications(10)) == 1 and store.outbox.states() == {"pending": 1}


def test_two_processes_on_one_database_open_one_incident_per_group(db_url):
    # two Store objects stand for two notifier processes; their in-process locks do not see each other
    stores = [Store(db_url), Store(db_url)]
    bodies = [payload(alert("a")), payload(alert("b", node="node-2"))]  # same group, different content
    threads = [threading.Thread(target=ingest, args=(s, b)) for s, b in zip(stores, bodies)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert [i["status"] for i in stores[0].notifications.list_incidents(10)] == ["firing"]
    assert len(stores[0].notifications.list_notifications(10)) == 2
    for s in stores:
        s.close()


def test_outbox_claims_lease_retry_and_give_up(store):
    ingest(store, payload(alert("a")))
    [delivery] = store.outbox.claim_due(now=1000.0, limit=10, lease_s=120)
    assert store.outbox.claim_due(now=1001.0, limit=10, lease_s=120) == []  # leased: not handed out twice
    store.outbox.record_attempt(delivery.id, 1002.0, ok=False, error="HTTP 500", duration_s=0.1, retry_at=1004.0)
    assert store.outbox.claim_due(now=1003.0, limit=10, lease_s=120) == []
    [again] = store.outbox.claim_due(now=1004.0, limit=10, lease_s=120)
    assert again.attempts == 1
    store.outbox.record_attempt(again.id, 1005.0, ok=False, error="HTTP 500", duration_s=0.1, retry_at=None)
    assert store.outbox.states() == {"failed": 1}
    assert [a["error"] for a in store.outbox.attempts_of(delivery.id)] == ["HTTP 500", "HTTP 500"]


def test_a_page_that_arrives_twice_is_recorded_once(store):
    ingest(store, payload(alert("a")))
    [delivery] = store.outbox.claim_due(now=1000.0, limit=10, lease_s=120)
    first = store.inbox.record_page(delivery.id, "t", "b", 1001.0)
    assert store.inbox.record_page(delivery.id, "t", "b", 1002.0) == first
    assert store.inbox.record_page(delivery.id + 100, "t", "b", 1002.0) is None
    [page] = store.inbox.list_pages(10)
    assert page["recipient"] == "demo-dri" and page["status"] == "firing" and page["labels"]["node"] == "node-1"


def test_the_webhook_api_runs_on_either_database(db_url, tmp_path):
    app = create_app(make_settings(tmp_path, db_url=db_url), parse_oncall(INBOX_ONLY), run_worker=False)
    hook = "/api/v1/alerts/alertmanager"
    with TestClient(app) as client:
        assert client.post(hook, json=payload(alert("a")), headers=AUTH).json()["incident_id"] == 1
        assert client.post(hook, json=payload(alert("a")), headers=AUTH).json()["duplicate"] is True
        client.post(hook, json=payload(alert("a", status="resolved")), headers=AUTH).raise_for_status()
        [incident] = client.get("/api/v1/incidents", headers=AUTH).json()["incidents"]
        assert incident["status"] == "resolved"
        assert len(client.get("/api/v1/notifications", headers=AUTH).json()["notifications"]) == 2


def test_the_timeline_records_on_the_callers_transaction_or_its_own(store):
    incident = ingest(store, payload(alert("a"))).incident_id
    store.timeline.record(None, incident, 1001.0, "note", "alice", text="looking")
    try:
        with store.engine.begin() as conn:
            store.timeline.record(conn, incident, 1002.0, "acknowledged", "bob")
            raise RuntimeError("rolled back")
    except RuntimeError:
        pass
    with store.engine.begin() as conn:
        store.timeline.record(conn, incident, 1003.0, "escalated", "carol", to_tier=1)
    events = [e for e in store.timeline.of(incident) if e["kind"] in ("note", "acknowledged", "escalated")]
    assert events == [
        dict(at="1970-01-01T00:16:41.000Z", kind="note", actor="alice", detail={"text": "looking"}),
        dict(at="1970-01-01T00:16:43.000Z", kind="escalated", actor="carol", detail={"to_tier": 1})]
    with pytest.raises(ValueError, match="unknown timeline event kind"):
        store.timeline.record(None, incident, 1004.0, "exploded")


def test_several_ingests_share_one_transaction(store):
    bodies = [payload(alert(name), group_key=name) for name in ("g1", "g2")]
    with store.engine.begin() as conn:
        results = [ingest_in(conn, store.notifications, WebhookPayload.model_validate(b), 1000.0, page_everyone)
                   for b in bodies]
    assert [r.incident_id for r in results] == [1, 2] and store.outbox.states() == {"pending": 2}


@pytest.mark.parametrize("first", ["alertmanager", "reconciliation"])
def test_reconciliation_and_alertmanagers_retry_of_one_group_open_one_incident_in_either_order(store, first):
    # at start reconciliation reads the store, then Alertmanager's retried notification may land before
    # reconciliation's own one is stored: whichever comes second joins the first's incident, unpaged
    from_alertmanager = payload(alert("a"))
    from_reconciliation = payload(alert("a", starts="2026-11-21T20:00:00.123Z"),
                                  group_key='reconciled:vigil:{"alertname": "GpuLost"}')
    bodies = [from_alertmanager, from_reconciliation]
    if first == "reconciliation":
        bodies.reverse()
    opened, joined = (ingest(store, body) for body in bodies)
    assert not opened.duplicate and not joined.duplicate
    assert joined.incident_id == opened.incident_id and joined.deliveries == 0
    [incident] = store.notifications.list_incidents(10)
    assert incident["status"] == "firing" and incident["group_key"] == '{}:{alertname="GpuLost"}'
    assert store.outbox.states() == {"pending": 1}
