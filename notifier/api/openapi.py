"""The OpenAPI document: the webhook and inbox bodies (parsed by hand in `parse.py`, so FastAPI cannot
see them) and the bearer scheme that every `/api/` route needs. Served at `/openapi.json`."""

from __future__ import annotations

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi
from fastapi.utils import deep_dict_update

from vigil.common.click_types import MAX_ROW_ID
from vigil.notifier.api.bodies import ActorBody, MaintenanceBody, MarkBody, NoteBody
from vigil.notifier.delivery.channels import PAGE_HEADER
from vigil.notifier.core.models import WebhookPayload
from vigil.rules.alertmanager import WEBHOOK_PATH

_REF = "#/components/schemas/{model}"
_ERROR = {"type": "object", "properties": {"error": {"type": "string"}}, "required": ["error"]}
_REFUSALS = {
    "400": "not JSON, or JSON that cannot be stored (lone surrogates, NUL characters, nested too deep)",
    "401": "missing or wrong bearer token",
    "413": "body larger than `--max-body-bytes`",
    "415": "not application/json",
    "422": "JSON that is not what this route takes; the error names the field",
}


def json_body(schema: dict, description: str) -> dict:
    """`openapi_extra` for a route whose JSON body is parsed by hand."""
    return {
        "requestBody": {"required": True, "description": description,
                        "content": {"application/json": {"schema": schema}}},
        "responses": {status: {"description": text, "content": {"application/json": {"schema": _ERROR}}}
                      for status, text in _REFUSALS.items()},
    }


WEBHOOK_BODY = json_body({"$ref": _REF.format(model="WebhookPayload")},
                         "Alertmanager's webhook notification, payload version 4; unknown fields are kept.")
HEARTBEAT_BODY = json_body({"$ref": _REF.format(model="WebhookPayload")},
                           "Alertmanager's Watchdog notification (a resolved one is not a beat), or no body at all "
                           "(any dead-man's switch).")
HEARTBEAT_BODY["requestBody"]["required"] = False
HEARTBEAT_BODY["responses"]["404"] = {"description": "a heartbeat the notifier does not watch",
                                      "content": {"application/json": {"schema": _ERROR}}}
INBOX_BODY = json_body(
    {"type": "object", "required": ["message"],
     "properties": {"title": {"type": "string"}, "message": {"type": "string"}, "type": {"type": "string"}}},
    "An apprise JSON notification (what the inbox channel sends).")
INBOX_BODY["parameters"] = [{"name": PAGE_HEADER, "in": "header", "required": True,
                             "description": "the outbox delivery this page belongs to",
                             "schema": {"type": "integer", "minimum": 1, "maximum": MAX_ROW_ID}}]

# the incident and maintenance routes: bodies as their pydantic models describe them, and the refusals
ACTOR_REFUSALS = {
    "404": {"description": "no such incident (or maintenance window)", "content": {"application/json": {"schema": _ERROR}}},
    "409": {"description": "impossible now (acknowledging a resolved incident, ending a window that is over)",
            "content": {"application/json": {"schema": _ERROR}}},
}


def model_body(model, description: str) -> dict:
    """`openapi_extra` for a hand-parsed body described by a pydantic `model`, with 404 and 409."""
    extra = json_body(model.model_json_schema(by_alias=True), description)
    extra["responses"].update(ACTOR_REFUSALS)
    return extra


ACTOR_BODY = model_body(ActorBody, "Who does it (shown on the incident's timeline).")
NOTE_BODY = model_body(NoteBody, "A note on the incident's timeline.")
MARK_BODY = model_body(MarkBody, "A person's verdict on the incident's page (counted in its rule's noise score).")
MAINTENANCE_BODY = model_body(MaintenanceBody, "A maintenance window: pages of matching incidents are held "
                                               "(recorded, not sent) while it lasts.")
HTML_PAGE = {"content": {"text/html": {"schema": {"type": "string"}}}}
LINK_RESPONSES = {
    "200": {"description": "a small page: the incident, and a button that acts (or the result)", **HTML_PAGE},
    "400": {"description": "an `open` link was posted: it only shows the incident", **HTML_PAGE},
    "403": {"description": "forged or altered link", **HTML_PAGE},
    "404": {"description": "the incident is gone", **HTML_PAGE},
    "409": {"description": "the link was used already, or the action is impossible now", **HTML_PAGE},
    "410": {"description": "the link has expired", **HTML_PAGE},
}


def document_api(app: FastAPI) -> None:
    """Make `app.openapi()` include the hand-parsed bodies' schemas and the bearer scheme."""

    def openapi() -> dict:
        if app.openapi_schema is None:
            doc = get_openapi(title=app.title, version=app.version, routes=app.routes)
            # the webhook's route lives below the API (`ingest/webhook.py`): its body is described here
            deep_dict_update(doc["paths"][WEBHOOK_PATH]["post"], WEBHOOK_BODY)
            schemas = doc.setdefault("components", {}).setdefault("schemas", {})
            payload = WebhookPayload.model_json_schema(ref_template=_REF)
            schemas.update(payload.pop("$defs", {}))
            schemas["WebhookPayload"] = payload
            doc["components"]["securitySchemes"] = {"bearer": {"type": "http", "scheme": "bearer"}}
            for path, operations in doc["paths"].items():
                for operation in operations.values():
                    if path.startswith("/api/"):
                        operation["security"] = [{"bearer": []}]
                    _errors_as_answered(operation)
            for framework_shape in ("HTTPValidationError", "ValidationError"):
                schemas.pop(framework_shape, None)
            app.openapi_schema = doc
        return app.openapi_schema

    app.openapi = openapi


def _errors_as_answered(operation: dict) -> None:
    """FastAPI documents its 422 as `{"detail": [...]}`; the notifier answers `{"error": "..."}`
    (`errors.py`), so say that."""
    refused = operation.get("responses", {}).get("422")
    if refused is not None and "HTTPValidationError" in str(refused):
        refused["description"] = "a path or query parameter that does not validate; the error says which and why"
        refused["content"] = {"application/json": {"schema": _ERROR}}
