"""The webhook as Alertmanager drives it: storing, idempotency, incidents, rejections, auth."""

from __future__ import annotations

import copy
import sqlite3

import pytest
from fastapi.testclient import TestClient

from vigil.notifier.app import create_app
from vigil.oncall.loader import parse_oncall
from test_notifier_support import AUTH, INBOX_ONLY, alert, make_settings, payload

HOOK = "/api/v1/alerts/alertmanager"


@pytest.fixture
def client(tmp_path):
    app = create_app(make_settings(tmp_path), parse_oncall(INBOX_ONLY), run_worker=False)
    with TestClient(app) as test_client:
        yield test_client


def get(client, path):
    response = client.get(path, headers=AUTH)
    assert response.status_code == 200, response.text
    return response.json()


def outbox(tmp_path) -> list[tuple]:
    with sqlite3.connect(tmp_path / "notifier.db") as db:
        return db.execute("SELECT incident_id, target, channel_type, page_status, state FROM deliveries "
                          "ORDER BY id").fetchall()


def metric(client, name: str) -> float:
    for line in client.get("/metrics").text.splitlines():
        if line.startswith(name + " ") or line.startswith(name + "{") and line.split(" ")[0] == name:
            return float(line.rsplit(" ", 1)[1])
    return 0.0


def test_firing_notification_is_stored_opens_an_incident_and_enqueues_a_page(client, tmp_path):
    response = client.post(HOOK, json=payload(), headers=AUTH)
    assert response.status_code == 200
    assert response.json() == {"status": "stored", "notification_id": 1, "incident_id": 1, "duplicate": False}

    [incident] = get(client, "/api/v1/incidents")["incidents"]
    assert incident["status"] == "firing" and incident["resolved_at"] is None
    assert incident["group_key"] == '{}:{alertname="GpuLost"}'
    assert incident["labels"] == {"alertname": "GpuLost", "node": "node-1", "gpu": "0", "severity": "critical"}
    assert incident["opened_at"] == "2026-11-21T20:00:00.123Z"
    assert "GpuLost" in incident["title"] and "node=node-1" in incident["title"]

    [notification] = get(client, "/api/v1/notifications")["notifications"]
    assert notification["incident_id"] == 1 and notification["status"] == "firing"
    assert notification["alerts"] == [{"labels": payload()["alerts"][0]["labels"], "status": "firing",
                                       "startsAt": "2026-11-21T20:00:00.123456789Z",
                                       "endsAt": "0001-01-01T00:00:00Z", "fingerprint": "fp-1"}]
    assert outbox(tmp_path) == [(1, "demo-dri", "inbox", "firing", "pending")]


def test_repeated_delivery_is_stored_once_and_paged_once(client, tmp_path):
    body = payload(alert("a"), alert("b", node="node-2"))
    first = client.post(HOOK, json=body, headers=AUTH).json()
    reordered = copy.deepcopy(body)
    reordered["alerts"].reverse()  # an HA peer may list the same alerts in another order
    second = client.post(HOOK, json=reordered, headers=AUTH)
    assert second.status_code == 200
    assert second.json() == {**first, "duplicate": True}
    assert len(get(client, "/api/v1/notifications")["notifications"]) == 1
    assert len(get(client, "/api/v1/incidents")["incidents"]) == 1
    assert len(outbox(tmp_path)) == 1
    assert metric(client, "vigil_notifier_webhook_duplicates_total") == 1


def test_resolution_resolves_the_incident_and_a_later_firing_opens_a_new_one(client, tmp_path):
    client.post(HOOK, json=payload(alert("a")), headers=AUTH)
    resolved = client.post(HOOK, json=payload(alert("a", status="resolved")), headers=AUTH).json()
    assert resolved["incident_id"] == 1 and not resolved["duplicate"]
    [incident] = get(client, "/api/v1/incidents")["incidents"]
    assert incident["status"] == "resolved" and incident["resolved_at"] is not None

    again = client.post(HOOK, json=payload(alert("a", starts="2026-11-21T21:00:00Z")), headers=AUTH).json()
    assert again["incident_id"] == 2
    statuses = [(i["id"], i["status"]) for i in get(client, "/api/v1/incidents")["incidents"]]
    assert statuses == [(1, "resolved"), (2, "firing")]
    assert [row[3] for row in outbox(tmp_path)] == ["firing", "resolved", "firing"]


def test_a_group_update_pages_only_for_alerts_it_has_not_seen(client, tmp_path):
    client.post(HOOK, json=payload(alert("a")), headers=AUTH)
    # Alertmanager sends the whole group every time: a new alert joins → page
    client.post(HOOK, json=payload(alert("a"), alert("b", node="node-2")), headers=AUTH)
    # one alert resolves while the other still fires: same incident, no new firing → no page
    client.post(HOOK, json=payload(alert("a"), alert("b", node="node-2", status="resolved")), headers=AUTH)
    assert len(get(client, "/api/v1/incidents")["incidents"]) == 1
    assert len(get(client, "/api/v1/notifications")["notifications"]) == 3
    assert [row[3] for row in outbox(tmp_path)] == ["firing", "firing"]


@pytest.mark.parametrize("alerts, title", [
    ([alert("a")], "GpuLost node=node-1 gpu=0 — GPU fell off the bus"),
    # grouped by node: the common labels lack alertname and gpu; the title lists what the alerts say
    ([alert("a", alertname="GpuFallenOffBus", gpu="3"), alert("b", alertname="GpuHot", gpu="3")],
     "GpuFallenOffBus, GpuHot node=node-1 gpu=3 — GPU fell off the bus"),
    ([alert(f"n{i}", node=f"node-{i}") for i in range(1, 6)],  # GPU indexes of several nodes are left out
     "GpuLost node=node-1,node-2,node-3,+2 more — GPU fell off the bus"),
    ([alert("x", alertname="", node="", gpu="")], "alert group — GPU fell off the bus"),
])
def test_incident_titles_name_the_alerts_and_where_never_the_group_key(client, alerts, title):
    client.post(HOOK, json=payload(*alerts, group_key='{}/{severity="critical"}:{node="node-1"}'),
                headers=AUTH).raise_for_status()
    [incident] = get(client, "/api/v1/incidents")["incidents"]
    assert incident["title"] == title
    assert incident["group_key"] == '{}/{severity="critical"}:{node="node-1"}'  # still there, as its own field


def test_a_group_without_a_common_summary_is_titled_with_its_first_alerts_summary(client):
    """One disk's several SMART attributes: one alert each, each with its own summary, so Alertmanager's
    commonAnnotations has none; the title still says what happened, not only the alert's name."""
    alerts = [alert(f"s{i}", alertname="DiskSmartUncorrectableSectors", gpu="", device="sda") for i in range(3)]
    for each, attribute in zip(alerts, ("offline_uncorrectable", "current_pending_sector", "reported_uncorrect")):
        each["annotations"] = {"summary": f"Disk sda on node-1 has 8 {attribute}"}
    body = payload(*alerts)
    body["commonAnnotations"] = {}
    client.post(HOOK, json=body, headers=AUTH).raise_for_status()
    [incident] = get(client, "/api/v1/incidents")["incidents"]
    assert incident["title"] == "DiskSmartUncorrectableSectors node=node-1 — Disk sda on node-1 has 8 current_pending_sector (+2 more)"


def test_unknown_fields_from_newer_alertmanagers_are_accepted(client):
    body = payload()
    body["notification_reason"] = 2
    body["routeLabels"] = {"team": "gpu"}
    body["alerts"][0]["somethingNew"] = True
    assert client.post(HOOK, json=body, headers=AUTH).status_code == 200


def _without(key):
    body = payload()
    del body[key]
    return body


def _alert_field(key, value):
    body = payload()
    body["alerts"][0][key] = value
    return body


@pytest.mark.parametrize("content, content_type, status, reason, says", [
    (b"this is not json", "application/json", 400, "invalid_json", "not valid JSON"),
    (b"alerts=1", "application/x-www-form-urlencoded", 415, "unsupported_media_type", "application/json"),
    ({**payload(), "version": "3"}, None, 422, "invalid_payload", "version"),
    (_without("groupKey"), None, 422, "invalid_payload", "groupKey"),
    ({**payload(), "alerts": []}, None, 422, "invalid_payload", "alerts"),
    ({**payload(), "status": "exploding"}, None, 422, "invalid_payload", "status"),
    (_alert_field("startsAt", "yesterday"), None, 422, "invalid_payload", "alerts.0.startsAt"),
    (_alert_field("fingerprint", ""), None, 422, "invalid_payload", "fingerprint"),
    ([1, 2, 3], None, 422, "invalid_payload", "body"),
])
def test_malformed_bodies_are_refused_with_a_reason_counted_and_nothing_stored(
        client, tmp_path, content, content_type, status, reason, says):
    if isinstance(content, bytes):
        response = client.post(HOOK, content=content, headers={**AUTH, "Content-Type": content_type})
    else:
        response = client.post(HOOK, json=content, headers=AUTH)
    assert response.status_code == status
    assert says in response.json()["error"]
    assert metric(client, f'vigil_notifier_webhook_rejected_total{{reason="{reason}"}}') == 1
    assert get(client, "/api/v1/notifications")["notifications"] == []
    assert get(client, "/api/v1/incidents")["incidents"] == []
    assert outbox(tmp_path) == []


@pytest.mark.parametrize("headers", [{}, {"Authorization": "Bearer wrong-token-0123456789"},
                                     {"Authorization": "Basic dXNlcjpwYXNz"}])
def test_missing_or_wrong_token_is_401_and_nothing_is_stored(client, headers):
    response = client.post(HOOK, json=payload(), headers=headers)
    assert response.status_code == 401
    assert "token" in response.json()["error"]
    for path in ("/api/v1/incidents", "/api/v1/notifications", "/api/v1/inbox"):
        assert client.get(path, headers=headers).status_code == 401
    assert metric(client, 'vigil_notifier_webhook_rejected_total{reason="unauthorized"}') == 1
    assert get(client, "/api/v1/notifications")["notifications"] == []


def test_other_methods_on_the_webhook_path_get_the_frameworks_answers(client):
    # the webhook's POST is served past FastAPI (`notifier/ingest/webhook.py`); the path's other methods are not
    assert client.get(HOOK).status_code == 401
    assert client.get(HOOK, headers=AUTH).status_code == 405
    assert client.put(HOOK, json=payload(), headers=AUTH).status_code == 405
    assert HOOK in client.get("/openapi.json").json()["paths"]
    assert get(client, "/api/v1/notifications")["notifications"] == []


def test_health_and_metrics_are_open(client):
    assert client.get("/healthz").json() == {"ok": True}
    client.post(HOOK, json=payload(), headers=AUTH)
    assert metric(client, 'vigil_notifier_webhook_received_total{status="firing"}') == 1


def test_notifications_survive_a_restart(tmp_path):
    settings, oncall = make_settings(tmp_path), parse_oncall(INBOX_ONLY)
    with TestClient(create_app(settings, oncall, run_worker=False)) as first:
        first.post(HOOK, json=payload(), headers=AUTH)
    with TestClient(create_app(settings, oncall, run_worker=False)) as second:
        assert len(get(second, "/api/v1/incidents")["incidents"]) == 1
        assert second.post(HOOK, json=payload(), headers=AUTH).json()["duplicate"] is True
    with sqlite3.connect(tmp_path / "notifier.db") as db:
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_a_store_failure_is_a_5xx_so_alertmanager_retries_and_the_retry_is_stored(tmp_path):
    app = create_app(make_settings(tmp_path), parse_oncall(INBOX_ONLY), run_worker=False)
    with TestClient(app, raise_server_exceptions=False) as client:
        _store_failure_then_retry(client, tmp_path)


def _store_failure_then_retry(client, tmp_path):
    with sqlite3.connect(tmp_path / "notifier.db") as db:
        db.execute("ALTER TABLE notifications RENAME TO notifications_away")  # the store breaks
    failed = client.post(HOOK, json=payload(), headers=AUTH)
    assert failed.status_code == 500 and "internal error" in failed.json()["error"]
    assert metric(client, f'vigil_notifier_http_server_errors_total{{route="{HOOK}"}}') == 1
    with sqlite3.connect(tmp_path / "notifier.db") as db:
        db.execute("ALTER TABLE notifications_away RENAME TO notifications")
    assert get(client, "/api/v1/incidents")["incidents"] == []  # the failed request left nothing behind
    retried = client.post(HOOK, json=payload(), headers=AUTH)
    assert retried.status_code == 200 and retried.json()["duplicate"] is False


def test_metrics_show_the_outbox_and_firing_incidents(client):
    client.post(HOOK, json=payload(alert("a"), group_key="g1"), headers=AUTH)
    client.post(HOOK, json=payload(alert("b"), group_key="g2"), headers=AUTH)
    client.post(HOOK, json=payload(alert("b", status="resolved"), group_key="g2"), headers=AUTH)
    assert metric(client, 'vigil_notifier_outbox_deliveries{state="pending"}') == 3
    assert metric(client, 'vigil_notifier_outbox_deliveries{state="failed"}') == 0
    assert metric(client, "vigil_notifier_incidents_firing") == 1


def test_each_open_incident_is_one_series_for_the_dashboards_annotations(client):
    """`vigil_incident_open`: one series per open fault with what Grafana's annotation shows; a resolved
    incident leaves it, an acknowledgement changes its state."""
    first = client.post(HOOK, json=payload(alert("a", gpu="3", job_id="4242"), group_key="g1"), headers=AUTH).json()
    second = client.post(HOOK, json=payload(alert("b", gpu="5"), group_key="g2"), headers=AUTH).json()
    client.post(f"/api/v1/incidents/{first['incident_id']}/ack", json={"by": "ana"}, headers=AUTH)
    client.post(HOOK, json=payload(alert("b", gpu="5", status="resolved"), group_key="g2"), headers=AUTH)
    series = [line for line in client.get("/metrics").text.splitlines() if line.startswith("vigil_incident_open{")]
    assert len(series) == 1, series
    [line] = series
    for label in (f'incident_id="{first["incident_id"]}"', 'state="acknowledged"', 'alertname="GpuLost"',
                  'node="node-1"', 'gpu="3"', 'job_id="4242"'):
        assert label in line, line
    assert f'incident_id="{second["incident_id"]}"' not in line and line.endswith(" 1.0")


def test_a_fresh_notifier_counts_every_possible_page_tier_and_breach_at_zero(tmp_path):
    """Before anything happens, each contact kind's sent and failed pages, each escalation tier and each
    priority's ack and resolve targets are series at 0: a quiet fleet's dashboards read 0, and the first
    page is an increase Prometheus can see."""
    from pathlib import Path

    import vigil.oncall

    example = parse_oncall((Path(vigil.oncall.__file__).parent / "examples" / "contacts.yaml").read_text())
    app = create_app(make_settings(tmp_path), example, run_worker=False)
    with TestClient(app) as fresh:
        page = fresh.get("/metrics").text
    kinds = {contact.kind for person in example.people.values() for contact in person.contacts.values()}
    assert len(kinds) >= 3
    for kind in kinds:
        for result in ("sent", "failed"):
            assert f'vigil_notifier_deliveries_total{{channel="{kind}",result="{result}"}} 0.0' in page
    tiers = max(len(policy.tiers) for policy in example.policies.values())
    assert all(f'vigil_notifier_escalations_total{{tier="{tier}"}} 0.0' in page for tier in range(tiers))
    assert f'vigil_notifier_escalations_total{{tier="{tiers}"}}' not in page
    for priority in example.priorities:
        for target in ("ack", "resolve"):
            assert f'vigil_notifier_sla_breaches_total{{priority="{priority}",target="{target}"}} 0.0' in page
    assert 'vigil_notifier_webhook_received_total{status="firing"} 0.0' in page
