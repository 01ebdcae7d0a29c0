"""A bounded schemathesis run against the notifier's own OpenAPI document (real uvicorn, on SQLite and on
PostgreSQL, whose 32-bit integers and NUL-less text found 500s SQLite never showed):
valid and invalid bodies, headers and query strings for every route; none may get a 5xx, no `/api/`
route answers without the bearer token, and no generated one-click link is ever accepted."""

from __future__ import annotations

import pytest
import requests
import schemathesis
import sqlalchemy as sa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error

from vigil.notifier.links import LINK_PATH, link_key, sign
from test_notifier_support import AUTH, TOKEN, NotifierServer, alert, free_port, make_settings, payload

EXAMPLES_PER_ROUTE = 25  # bounded: about 30 s in all on a 2-core machine
UNAUTHENTICATED_PER_ROUTE = 5
ROUTES = {"/api/v1/alerts/alertmanager", "/api/v1/inbox", "/api/v1/incidents", "/api/v1/incidents/{incident_id}",
          "/api/v1/incidents/{incident_id}/ack", "/api/v1/incidents/{incident_id}/resolve",
          "/api/v1/incidents/{incident_id}/escalate", "/api/v1/incidents/{incident_id}/notes",
          "/api/v1/maintenance", "/api/v1/maintenance/{window_id}/end", LINK_PATH + "{token}"}


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def notifier(request, tmp_path_factory):
    folder = tmp_path_factory.mktemp("fuzz")
    db_url = f"sqlite:///{folder / 'notifier.db'}"
    if request.param == "postgresql":
        server = request.getfixturevalue("postgres_server")
        admin = sa.create_engine(server.replace("postgresql://", "postgresql+psycopg://") + "/postgres",
                                 isolation_level="AUTOCOMMIT")
        with admin.connect() as conn:
            conn.exec_driver_sql(f'CREATE DATABASE "fuzz_{folder.name.lower().replace("-", "_")}"')
        admin.dispose()
        db_url = f"{server}/fuzz_{folder.name.lower().replace('-', '_')}"
    with NotifierServer(make_settings(folder, port=free_port(), db_url=db_url)) as server:
        yield server


def operations_of(notifier):
    schema = schemathesis.openapi.from_url(f"{notifier.url}/openapi.json")
    schema.config.generation.update(allow_x00=True)
    return [result.ok() for result in schema.get_all_operations()]


def run_cases(operation, examples: int, check) -> None:
    cases = st.one_of(operation.as_strategy(GenerationMode.POSITIVE), operation.as_strategy(GenerationMode.NEGATIVE))

    @given(case=cases)
    @settings(max_examples=examples, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    def each(case):
        check(case)

    each()


def test_no_request_gets_a_server_error(notifier):
    operations = operations_of(notifier)
    assert {op.path for op in operations} >= ROUTES
    requests.post(f"{notifier.url}/api/v1/alerts/alertmanager", json=payload(alert("a")), headers=AUTH,
                  timeout=5).raise_for_status()  # incident 1 exists: its actions get past the 404
    calls = []
    for operation in operations:
        def no_server_error(case, operation=operation):
            response = case.call(base_url=notifier.url, headers=AUTH)
            calls.append((operation.path, response.status_code))
            case.validate_response(response, checks=[not_a_server_error])
        run_cases(operation, EXAMPLES_PER_ROUTE, no_server_error)
    assert len(calls) >= 2 * len(operations)
    webhook = {code for path, code in calls if path == "/api/v1/alerts/alertmanager"}
    assert 200 in webhook and any(400 <= code < 500 for code in webhook), webhook  # both kinds were tried
    links = {code for path, code in calls if path.startswith(LINK_PATH)}
    assert links and links <= {403}, links  # a generated token is never a genuine link


def test_no_api_route_answers_without_the_token(notifier):
    calls = []
    for operation in operations_of(notifier):
        if not operation.path.startswith("/api/"):
            continue

        def refused(case, operation=operation):
            response = case.call(base_url=notifier.url, headers={"Authorization": "Bearer wrong-token"})
            calls.append(operation.path)
            assert response.status_code == 401, (operation.path, response.status_code, response.text)
        run_cases(operation, UNAUTHENTICATED_PER_ROUTE, refused)
    assert set(calls) >= {path for path in ROUTES if path.startswith("/api/")}


def test_forged_and_expired_links_are_refused_and_change_nothing(notifier):
    incident = requests.post(f"{notifier.url}/api/v1/alerts/alertmanager", json=payload(alert("link"), group_key="l"),
                             headers=AUTH, timeout=5).json()["incident_id"]
    forged = sign(link_key("not-the-webhook-token-0123456789"), incident, "resolve", 4_000_000_000)
    expired = sign(link_key(TOKEN), incident, "resolve", 1_000_000_000)
    for token, status in ((forged, 403), (expired, 410)):
        for method in ("GET", "POST"):
            response = requests.request(method, f"{notifier.url}{LINK_PATH}{token}", timeout=5)
            assert response.status_code == status and "<p>This link" in response.text
    state = requests.get(f"{notifier.url}/api/v1/incidents/{incident}", headers=AUTH, timeout=5).json()["state"]
    assert state != "resolved"


def test_the_document_describes_the_webhook_body_and_the_bearer_scheme(notifier):
    doc = requests.get(f"{notifier.url}/openapi.json", timeout=5).json()
    webhook = doc["paths"]["/api/v1/alerts/alertmanager"]["post"]
    assert webhook["requestBody"]["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/WebhookPayload"}
    assert {"version", "groupKey", "status", "receiver", "alerts"} <= set(doc["components"]["schemas"]["WebhookPayload"]["required"])
    assert doc["components"]["securitySchemes"]["bearer"] == {"type": "http", "scheme": "bearer"}
    assert webhook["security"] == [{"bearer": []}]
    assert "security" not in doc["paths"]["/healthz"]["get"]


def test_the_document_describes_the_incident_actions_and_the_open_links(notifier):
    doc = requests.get(f"{notifier.url}/openapi.json", timeout=5).json()
    ack = doc["paths"]["/api/v1/incidents/{incident_id}/ack"]["post"]
    assert ack["requestBody"]["content"]["application/json"]["schema"]["required"] == ["by"]
    assert {"404", "409", "422"} <= set(ack["responses"]) and ack["security"] == [{"bearer": []}]
    window = doc["paths"]["/api/v1/maintenance"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert {"match", "starts_at", "ends_at", "for", "reason", "by"} == set(window["properties"])
    link = doc["paths"][LINK_PATH + "{token}"]
    assert "security" not in link["get"] and "security" not in link["post"]  # the signature is the credential
    assert {"403", "409", "410"} <= set(link["post"]["responses"])
    assert "text/html" in link["get"]["responses"]["200"]["content"]
