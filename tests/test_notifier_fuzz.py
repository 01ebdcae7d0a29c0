"""A bounded schemathesis run against the notifier's own OpenAPI document (real uvicorn, SQLite):
valid and invalid bodies, headers and query strings for every route; none may get a 5xx."""

from __future__ import annotations

import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error

from test_notifier_support import AUTH, NotifierServer, free_port, make_settings

EXAMPLES_PER_ROUTE = 40  # bounded: about 15 s in all on a 2-core machine


@pytest.fixture(scope="module")
def notifier(tmp_path_factory):
    settings = make_settings(tmp_path_factory.mktemp("fuzz"), port=free_port())
    with NotifierServer(settings) as server:
        yield server


def test_no_request_gets_a_server_error(notifier):
    schema = schemathesis.openapi.from_url(f"{notifier.url}/openapi.json")
    schema.config.generation.update(allow_x00=True)
    operations = [result.ok() for result in schema.get_all_operations()]
    assert {op.path for op in operations} >= {"/api/v1/alerts/alertmanager", "/api/v1/inbox", "/api/v1/incidents"}
    calls = []
    for operation in operations:
        cases = st.one_of(operation.as_strategy(GenerationMode.POSITIVE),
                          operation.as_strategy(GenerationMode.NEGATIVE))

        @given(case=cases)
        @settings(max_examples=EXAMPLES_PER_ROUTE, deadline=None, derandomize=True, database=None,
                  suppress_health_check=list(HealthCheck))
        def no_server_error(case):
            response = case.call(base_url=notifier.url, headers=AUTH)
            calls.append((operation.path, response.status_code))
            case.validate_response(response, checks=[not_a_server_error])

        no_server_error()
    assert len(calls) >= 2 * len(operations)
    webhook = {code for path, code in calls if path == "/api/v1/alerts/alertmanager"}
    assert 200 in webhook and any(400 <= code < 500 for code in webhook), webhook  # both kinds were tried


def test_the_document_describes_the_webhook_body_and_the_bearer_scheme(notifier):
    doc = requests.get(f"{notifier.url}/openapi.json", timeout=5).json()
    webhook = doc["paths"]["/api/v1/alerts/alertmanager"]["post"]
    assert webhook["requestBody"]["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/WebhookPayload"}
    assert {"version", "groupKey", "status", "receiver", "alerts"} <= set(doc["components"]["schemas"]["WebhookPayload"]["required"])
    assert doc["components"]["securitySchemes"]["bearer"] == {"type": "http", "scheme": "bearer"}
    assert webhook["security"] == [{"bearer": []}]
    assert "security" not in doc["paths"]["/healthz"]["get"]
