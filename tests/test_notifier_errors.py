"""Every refusal of the notifier's HTTP API is `{"error": "<sentence>"}` with a 4xx (docs/notifier.md),
also the ones the web framework answers itself: a path or query parameter that does not validate, an
unknown route, a method the route does not take. Driven over real HTTP against a real uvicorn."""

from __future__ import annotations

import pytest
import requests

from test_notifier_support import AUTH, NotifierServer, free_port, make_settings


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with NotifierServer(make_settings(tmp_path_factory.mktemp("errors"), port=free_port())) as running:
        yield running


# (method, path with query, status, the whole reason)
CASES = [
    ("GET", "/api/v1/incidents/abc", 422, "incident id must be an integer, got 'abc'"),
    ("GET", "/api/v1/incidents/0", 422, f"incident id must be between 1 and {2**63 - 1}, got 0"),
    ("POST", "/api/v1/incidents/99999999999999999999/ack", 422,
     f"incident id must be between 1 and {2**63 - 1}, got 99999999999999999999"),
    ("GET", "/api/v1/incidents?limit=0", 422, "limit must be between 1 and 5000, got 0"),
    ("GET", "/api/v1/notifications?limit=lots", 422, "limit must be an integer, got 'lots'"),
    ("GET", "/api/v1/incidents?state=burning", 422,
     "state must be one of 'triggered', 'acknowledged' or 'resolved', got 'burning'"),
    ("GET", "/api/v1/incidents?priority=P9", 422, "priority must match ^P[1-5]$, got 'P9'"),
    ("GET", "/api/v1/incidents?limit=0&state=burning", 422,
     "limit must be between 1 and 5000, got 0; state must be one of 'triggered', 'acknowledged' or "
     "'resolved', got 'burning'"),
    ("GET", "/api/v1/foo", 404, "no such endpoint GET /api/v1/foo"),
    ("DELETE", "/api/v1/incidents/1", 405, "DELETE is not allowed on /api/v1/incidents/1 (allowed: GET)"),
    ("PUT", "/api/v1/alerts/alertmanager", 405, "PUT is not allowed on /api/v1/alerts/alertmanager (allowed: POST)"),
    ("GET", "/nowhere", 404, "no such endpoint GET /nowhere"),
]


@pytest.mark.parametrize("method,path,status,reason", CASES, ids=[f"{c[0]} {c[1]}" for c in CASES])
def test_refusals_are_a_readable_error(server, method, path, status, reason):
    answer = requests.request(method, server.url + path, headers=AUTH, timeout=5)
    assert answer.status_code == status, answer.text
    assert answer.json() == {"error": reason}


def test_a_wrong_method_still_says_what_is_allowed(server):
    answer = requests.delete(server.url + "/api/v1/incidents/1", headers=AUTH, timeout=5)
    assert answer.headers["Allow"] == "GET"


def test_existing_reasons_are_kept(server):
    missing = requests.get(server.url + "/api/v1/incidents/424242", headers=AUTH, timeout=5)
    assert missing.status_code == 404 and missing.json() == {"error": "no incident 424242"}
    no_token = requests.get(server.url + "/api/v1/foo", timeout=5)
    assert no_token.status_code == 401 and no_token.json() == {"error": "missing or wrong bearer token"}


def test_the_openapi_document_says_the_same(server):
    doc = requests.get(server.url + "/openapi.json", timeout=5).json()
    assert "HTTPValidationError" not in str(doc)
    refused = doc["paths"]["/api/v1/incidents/{incident_id}"]["get"]["responses"]["422"]
    assert refused["content"]["application/json"]["schema"]["required"] == ["error"]
