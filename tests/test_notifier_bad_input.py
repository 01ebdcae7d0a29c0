"""Malformed requests get a 4xx with a reason and are counted; none becomes a 5xx (Alertmanager would
retry a 5xx forever, so the whole group would never page). Each case runs against a real uvicorn
serving the notifier, on SQLite and on PostgreSQL, and the server still works afterwards."""

from __future__ import annotations

import json

import pytest
import requests

from test_notifier_support import AUTH, NotifierServer, alert, free_port, make_settings, payload, wait_for

HOOK = "/api/v1/alerts/alertmanager"
LIMIT = 256 * 1024


def with_alert(**changes) -> dict:
    return payload({**alert(), **changes})


def deep(levels: int) -> dict:
    doc = {"version": "4", **payload()}
    inner = doc
    for _ in range(levels):
        inner["x"] = {}
        inner = inner["x"]
    return doc


def raw_json(doc: dict) -> bytes:
    return json.dumps(doc).encode()


# (name, body bytes, expected status, expected reason label)
WEBHOOK_CASES = [
    ("start overflows in UTC", raw_json(with_alert(startsAt="0001-01-01T00:00:00+01:00")), 422, "invalid_payload"),
    ("end overflows in UTC", raw_json(with_alert(endsAt="0001-01-01T00:00:00+01:00")), 422, "invalid_payload"),
    ("start not a time", raw_json(with_alert(startsAt="yesterday")), 422, "invalid_payload"),
    ("start at Alertmanager's zero time", raw_json(with_alert(startsAt="0001-01-01T00:00:00Z")), 422, "invalid_payload"),
    ("start a bare number of seconds", raw_json(with_alert(startsAt="1700000000")), 422, "invalid_payload"),
    ("start at the last nanosecond of 9999", raw_json(with_alert(startsAt="9999-12-31T23:59:59.999999999Z")), 422,
     "invalid_payload"),
    ("start before the Unix epoch", raw_json(with_alert(startsAt="1969-12-31T23:59:59Z")), 422, "invalid_payload"),
    ("end a bare number of seconds", raw_json(with_alert(endsAt="1700000000")), 422, "invalid_payload"),
    ("start without a UTC offset", raw_json(with_alert(startsAt="2026-11-25T09:00:00")), 422, "invalid_payload"),
    ("an empty label name", raw_json(with_alert(labels={"alertname": "A", "": "x"})), 422, "invalid_payload"),
    ("lone surrogate in a label", raw_json(payload(alert(node="\ud800"))).replace(b"\\\\", b"\\"), 400, "invalid_text"),
    ("lone surrogate in the group key", raw_json(payload(group_key="g\udfff")), 400, "invalid_text"),
    ("lone surrogate in an unknown field", raw_json({**payload(), "routeLabels": {"x": "\ud83d"}}), 400, "invalid_text"),
    ("lone surrogate in a key", raw_json({**payload(), "\ud800": 1}), 400, "invalid_text"),
    ("NUL in a label", raw_json(payload(alert(node="node\u00001"))), 400, "invalid_text"),
    ("NUL in an annotation", raw_json(with_alert(annotations={"summary": "a\u0000b"})), 400, "invalid_text"),
    ("nested past the parser's recursion limit", b"[" * 100_000 + b"]" * 100_000, 400, "too_deep"),
    ("nested 300 levels inside an unknown field", raw_json(deep(300)), 400, "too_deep"),
    ("NaN", raw_json(payload()).replace(b'"truncatedAlerts": 0', b'"truncatedAlerts": NaN'), 400, "invalid_json"),
    ("truncatedAlerts beyond any count", raw_json({**payload(), "truncatedAlerts": 10**30}), 422, "invalid_payload"),
    ("larger than the limit", raw_json(with_alert(annotations={"summary": "x" * LIMIT})), 413, "too_large"),
    ("not JSON", b"{not json", 400, "invalid_json"),
    ("not UTF-8", b"\xff\xfe{}", 400, "invalid_json"),
]


def rejected(server: NotifierServer) -> dict[str, float]:
    out = {}
    for line in requests.get(f"{server.url}/metrics", timeout=5).text.splitlines():
        if line.startswith("vigil_notifier_webhook_rejected_total{"):
            out[line.split('reason="')[1].split('"')[0]] = float(line.rsplit(" ", 1)[1])
    return out


def server_errors(server: NotifierServer) -> float:
    text = requests.get(f"{server.url}/metrics", timeout=5).text
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
               if line.startswith("vigil_notifier_http_server_errors_total"))


@pytest.fixture
def server(tmp_path, db_url):  # noqa: F811 (fixture)
    settings = make_settings(tmp_path, port=free_port(), db_url=db_url, max_body_bytes=LIMIT)
    with NotifierServer(settings) as running:
        yield running


def test_every_malformed_webhook_gets_a_4xx_with_a_reason_and_stores_nothing(server):
    before = rejected(server)
    for name, body, status, reason in WEBHOOK_CASES:
        response = requests.post(server.url + HOOK, data=body, timeout=30,
                                 headers={**AUTH, "Content-Type": "application/json"})
        assert response.status_code == status, (name, response.status_code, response.text[:300])
        assert response.json()["error"], name
    after = rejected(server)
    expected: dict[str, int] = {}
    for _, _, _, reason in WEBHOOK_CASES:
        expected[reason] = expected.get(reason, 0) + 1
    assert {reason: after[reason] - before.get(reason, 0) for reason in expected} == expected
    assert server_errors(server) == 0
    stored = requests.get(server.url + "/api/v1/notifications", headers=AUTH, timeout=5).json()["notifications"]
    assert stored == []
    # the server is fine: a good notification is stored and paged
    good = requests.post(server.url + HOOK, json=payload(), headers=AUTH, timeout=10)
    assert good.status_code == 200, good.text
    assert wait_for(lambda: requests.get(server.url + "/api/v1/inbox", headers=AUTH, timeout=5).json()["pages"])


def test_a_chunked_body_over_the_limit_is_refused_while_streaming(server):
    def chunks():
        yield b'{"version": "4", "pad": "'
        for _ in range(LIMIT // 1024 + 2):
            yield b"x" * 1024
        yield b'"}'

    response = requests.post(server.url + HOOK, data=chunks(), timeout=30,
                             headers={**AUTH, "Content-Type": "application/json"})
    assert response.status_code == 413 and "limit" in response.json()["error"]


@pytest.mark.parametrize("header", ["99999999999999999999", "9223372036854775808", "0", "-1", "１２".encode(), "", "12 34"])
def test_an_inbox_page_with_an_impossible_delivery_id_is_a_422(server, header):
    response = requests.post(server.url + "/api/v1/inbox", json={"title": "t", "message": "m"}, timeout=10,
                             headers={**AUTH, "X-Vigil-Page": header} if header else AUTH)
    assert response.status_code == 422, response.text
    assert "X-Vigil-Page" in response.json()["error"]
    assert server_errors(server) == 0


@pytest.mark.parametrize("body", [{"title": {"a": 1}, "message": "m"}, {"title": ["t"], "message": "m"},
                                  {"title": 7, "message": "m"}, {"title": "t", "message": 7}, ["t", "m"]])
def test_an_inbox_page_that_is_not_text_is_a_422_and_not_recorded(server, body):
    def pages():
        return requests.get(server.url + "/api/v1/inbox", headers=AUTH, timeout=10).json()["pages"]

    incident = requests.post(server.url + HOOK, json=payload(alert()), headers=AUTH, timeout=10).json()["incident_id"]
    wait_for(lambda: len(pages()) == 1)  # a real page, so its delivery id is one the inbox accepts
    [page] = pages()
    [delivery] = requests.get(f"{server.url}/api/v1/incidents/{incident}", headers=AUTH, timeout=10).json()["pages"]
    response = requests.post(server.url + "/api/v1/inbox", json=body, timeout=10,
                             headers={**AUTH, "X-Vigil-Page": str(delivery["id"])})
    assert response.status_code == 422 and "`title` and `message` (text)" in response.json()["error"], response.text
    assert pages() == [page]
    assert server_errors(server) == 0


def test_a_huge_summary_is_paged_as_a_short_title_and_body(server):
    summary = "GPU fell off the bus " * 5_000  # 105 kB: under the limit, far over a page
    doc = with_alert(annotations={"summary": summary})
    doc["commonAnnotations"] = {"summary": summary}
    response = requests.post(server.url + HOOK, json=doc, headers=AUTH, timeout=10)
    assert response.status_code == 200, response.text
    page = wait_for(lambda: requests.get(server.url + "/api/v1/inbox", headers=AUTH, timeout=5).json()["pages"])[0]
    assert len(page["title"]) <= 200 and page["title"].startswith("[FIRING:1] GpuLost node=node-1 gpu=0")
    assert page["title"].endswith("…")
    assert len(page["body"]) < 1_200  # the cut summary, the action lines and four links signed for the person
    incident = requests.get(server.url + "/api/v1/incidents", headers=AUTH, timeout=5).json()["incidents"][0]
    assert len(incident["title"]) <= 200
