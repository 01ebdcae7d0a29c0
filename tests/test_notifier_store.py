"""The store on both databases it supports: SQLite (default) and a real PostgreSQL server.

PostgreSQL runs when Debian's server binaries are installed and the tests run as root (the server is
started as the `postgres` user on a temp directory and a loopback port); otherwise those cases skip.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path

import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient

from vigil.notifier.app import create_app
from vigil.notifier.models import WebhookPayload
from vigil.notifier.store import NewDelivery, Store
from vigil.oncall.loader import parse_oncall
from test_notifier_support import AUTH, INBOX_ONLY, alert, free_port, make_settings, payload

PG_BIN = Path("/usr/lib/postgresql/15/bin")


@pytest.fixture(scope="module")
def postgres_server():
    if not (PG_BIN / "initdb").exists() or os.geteuid() != 0:
        pytest.skip("PostgreSQL server binaries or root (to run them as `postgres`) not available")
    root = Path(tempfile.mkdtemp(prefix="vigil-pg-"))
    shutil.chown(root, "postgres")
    port = free_port()
    as_postgres = ["runuser", "-u", "postgres", "--"]
    subprocess.run([*as_postgres, PG_BIN / "initdb", "-D", root / "data", "-A", "trust", "-U", "postgres"],
                   check=True, capture_output=True)
    subprocess.run([*as_postgres, PG_BIN / "pg_ctl", "-D", root / "data", "-l", root / "log", "-w", "-o",
                    f"-p {port} -k {root} -c listen_addresses=127.0.0.1", "start"], check=True, capture_output=True)
    try:
        yield f"postgresql://postgres@127.0.0.1:{port}"
    finally:
        subprocess.run([*as_postgres, PG_BIN / "pg_ctl", "-D", root / "data", "-m", "fast", "-w", "stop"],
                       capture_output=True)
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request, tmp_path):
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'notifier.db'}"
    server = request.getfixturevalue("postgres_server")
    name = f"t_{tmp_path.name.lower().replace('-', '_')}"[:60]
    admin = sa.create_engine(server.replace("postgresql://", "postgresql+psycopg://") + "/postgres",
                             isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.exec_driver_sql(f'CREATE DATABASE "{name}"')
    admin.dispose()
    return f"{server}/{name}"


@pytest.fixture
def store(db_url):
    opened = Store(db_url)
    yield opened
    opened.close()


def page_everyone(payload, decision, incident_id, labels):
    return [NewDelivery("demo-dri", 0, "inbox", f"[{decision.page_status}] #{incident_id}", "body")]


def ingest(store, body, now=1000.0):
    return store.ingest(WebhookPayload.model_validate(body), now, page_everyone)


def test_incident_lifecycle_and_idempotency(store):
    first = ingest(store, payload(alert("a")))
    assert ingest(store, payload(alert("a"))).duplicate
    ingest(store, payload(alert("a", status="resolved")), now=1060.0)
    reopened = ingest(store, payload(alert("a", starts="2026-11-21T21:00:00Z")), now=1100.0)
    incidents = store.list_incidents(10)
    assert [(i["id"], i["status"]) for i in incidents] == [(first.incident_id, "resolved"),
                                                            (reopened.incident_id, "firing")]
    assert incidents[0]["resolved_at"] == "1970-01-01T00:17:40.000Z"
    assert len(store.list_notifications(10)) == 3
    assert store.delivery_states() == {"pending": 3}


def test_the_same_notification_from_many_threads_is_stored_once(store):
    results, body = [], payload(alert("a"), alert("b", node="node-2"))
    threads = [threading.Thread(target=lambda: results.append(ingest(store, body))) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(r.duplicate for r in results) == [False] + [True] * 5
    assert len(store.list_notifications(10)) == 1 and store.delivery_states() == {"pending": 1}


def test_two_processes_on_one_database_open_one_incident_per_group(db_url):
    # two Store objects stand for two notifier processes; their in-process locks do not see each other
    stores = [Store(db_url), Store(db_url)]
    bodies = [payload(alert("a")), payload(alert("b", node="node-2"))]  # same group, different content
    threads = [threading.Thread(target=ingest, args=(s, b)) for s, b in zip(stores, bodies)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert [i["status"] for i in stores[0].list_incidents(10)] == ["firing"]
    assert len(stores[0].list_notifications(10)) == 2
    for s in stores:
        s.close()


def test_outbox_claims_lease_retry_and_give_up(store):
    ingest(store, payload(alert("a")))
    [delivery] = store.claim_due(now=1000.0, limit=10, lease_s=120)
    assert store.claim_due(now=1001.0, limit=10, lease_s=120) == []  # leased: not handed out twice
    store.record_attempt(delivery.id, 1002.0, ok=False, error="HTTP 500", duration_s=0.1, retry_at=1004.0)
    assert store.claim_due(now=1003.0, limit=10, lease_s=120) == []
    [again] = store.claim_due(now=1004.0, limit=10, lease_s=120)
    assert again.attempts == 1
    store.record_attempt(again.id, 1005.0, ok=False, error="HTTP 500", duration_s=0.1, retry_at=None)
    assert store.delivery_states() == {"failed": 1}
    assert [a["error"] for a in store.attempts_of(delivery.id)] == ["HTTP 500", "HTTP 500"]


def test_a_page_that_arrives_twice_is_recorded_once(store):
    ingest(store, payload(alert("a")))
    [delivery] = store.claim_due(now=1000.0, limit=10, lease_s=120)
    first = store.record_inbox_page(delivery.id, "t", "b", 1001.0)
    assert store.record_inbox_page(delivery.id, "t", "b", 1002.0) == first
    assert store.record_inbox_page(delivery.id + 100, "t", "b", 1002.0) is None
    [page] = store.list_inbox(10)
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
