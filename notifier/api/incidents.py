"""Incidents that people work, and the notifications behind them:

- `GET /api/v1/incidents?state=&priority=&team=&limit=`: the newest `limit`, oldest first;
- `GET /api/v1/incidents/{id}`: the incident, its alerts (as the latest notification lists them), its
  timeline and its pages (each with its send attempts);
- `POST /api/v1/incidents/{id}/ack|resolve|escalate|reopen` (`{"by": NAME}`) and `…/notes`
  (`{"by": NAME, "text": …}`): 404 for an unknown incident, 409 for what cannot happen now (acknowledge
  a resolved incident …), 422 for a bad body;
- `POST /api/v1/incidents/{id}/mark` (`{"by": NAME, "verdict": "noisy"|"not_actionable"|"actionable",
  "reason": …}`): a person's verdict on the page, in any state (the rule's noise score counts it);
- `GET /api/v1/notifications`.
"""

from __future__ import annotations

import functools
from typing import Annotated, Literal

from fastapi import APIRouter, Query, Request
from starlette.concurrency import run_in_threadpool

from vigil.notifier.api.deps import ClockDep, ListLimit, QueryName, StoreDep
from vigil.notifier.api.openapi import ACTOR_BODY, ACTOR_REFUSALS, MARK_BODY, NOTE_BODY
from vigil.notifier.api.bodies import actor_body, mark_body, note_body
from vigil.notifier.core.rejected import Rejected
from vigil.notifier.engine import actions
from vigil.notifier.read_models import IncidentId, incident_detail
from vigil.notifier.store import Store

router = APIRouter()
State = Literal["triggered", "acknowledged", "resolved"]
Priority = Annotated[str, Query(pattern=r"^P[1-5]$")]
Team = Annotated[QueryName, Query()]
ACTIONS = {"ack": actions.acknowledge, "resolve": actions.resolve, "escalate": actions.escalate_now,
           "reopen": actions.reopen}
WITH_ONCALL = {actions.escalate_now}  # actions that read the on-call file (the acknowledge target's length)


@router.get("/api/v1/incidents")
async def list_incidents(store: StoreDep, limit: ListLimit = 500, state: State | None = None,
                         priority: Priority | None = None, team: Team | None = None):
    return {"incidents": await run_in_threadpool(store.notifications.list_incidents, limit, state, priority, team)}


@router.get("/api/v1/incidents/{incident_id}", responses={"404": ACTOR_REFUSALS["404"]})
async def show_incident(store: StoreDep, incident_id: IncidentId):
    found = await run_in_threadpool(incident_detail, store, incident_id)
    if found is None:
        raise Rejected(404, "not_found", f"no incident {incident_id}")
    return found




def _actor_route(verb: str, action) -> None:
    async def act(request: Request, store: StoreDep, clock: ClockDep, incident_id: IncidentId):
        body = await actor_body(request)
        run = functools.partial(action, oncall=request.app.state.oncall) if action in WITH_ONCALL else action
        return await _run(run, store, incident_id, body.by, clock())

    router.add_api_route(f"/api/v1/incidents/{{incident_id}}/{verb}", act, methods=["POST"], name=f"{verb}_incident",
                         openapi_extra=ACTOR_BODY, summary=f"{verb.capitalize()} the incident")


for _verb, _action in ACTIONS.items():
    _actor_route(_verb, _action)


@router.post("/api/v1/incidents/{incident_id}/notes", openapi_extra=NOTE_BODY)
async def add_note(request: Request, store: StoreDep, clock: ClockDep, incident_id: IncidentId):
    body = await note_body(request)

    def note(store: Store, incident_id: int, by: str, now: float) -> dict:
        return actions.add_note(store, incident_id, by, body.text, now)
    return await _run(note, store, incident_id, body.by, clock())


async def _run(action, store: Store, incident_id: int, by: str, now: float) -> dict:
    """Run `action(store, incident_id, by, now)`; its refusals become 404 / 409 with the reason."""
    try:
        return await run_in_threadpool(action, store, incident_id, by, now)
    except actions.IncidentNotFound as exc:
        raise Rejected(404, "not_found", str(exc)) from None
    except actions.TransitionRefused as exc:
        raise Rejected(409, "conflict", exc.reason) from None


@router.post("/api/v1/incidents/{incident_id}/mark", openapi_extra=MARK_BODY)
async def mark_incident(request: Request, store: StoreDep, clock: ClockDep, incident_id: IncidentId):
    body = await mark_body(request)

    def mark(store: Store, incident_id: int, by: str, now: float) -> dict:
        return actions.mark(store, incident_id, by, body.verdict, now, body.reason)
    return await _run(mark, store, incident_id, body.by, clock())


@router.get("/api/v1/notifications")
async def list_notifications(store: StoreDep, limit: ListLimit = 500):
    return {"notifications": await run_in_threadpool(store.notifications.list_notifications, limit)}
