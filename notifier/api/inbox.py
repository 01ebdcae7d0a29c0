"""The local inbox: `POST /api/v1/inbox` (pages arriving through apprise) and `GET /api/v1/inbox`."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request
from pydantic import AwareDatetime, Field
from starlette.concurrency import run_in_threadpool

from vigil.notifier.api.deps import ClockDep, ListLimit, QueryName, StoreDep
from vigil.notifier.api.openapi import INBOX_BODY
from vigil.common.click_types import MAX_ROW_ID
from vigil.notifier.api.bodies import page_arrival
from vigil.notifier.core.rejected import Rejected
from vigil.notifier.delivery.channels import INBOX_PATH
from vigil.notifier.core.models import AlertStatus

router = APIRouter()
IncidentNumber = Annotated[int, Field(ge=1, le=MAX_ROW_ID)]


@router.post(INBOX_PATH, openapi_extra=INBOX_BODY)
async def inbox_arrival(request: Request, store: StoreDep, clock: ClockDep):
    page = await page_arrival(request)
    page_id = await run_in_threadpool(store.inbox.record_page, page.delivery_id, page.title, page.body, clock())
    if page_id is None:
        raise Rejected(422, "invalid_payload", f"no outbox delivery {page.delivery_id}")
    return {"status": "recorded", "id": page_id}


@router.get(INBOX_PATH)
async def inbox(store: StoreDep, limit: ListLimit = 500, to: Annotated[list[QueryName] | None, Query()] = None,
                incident: Annotated[list[IncidentNumber] | None, Query()] = None,
                status: AlertStatus | None = None, since: AwareDatetime | None = None):
    """The newest `limit` pages, oldest first; `to` (a person, repeatable), `incident` (an id, repeatable),
    `status` and `since` (RFC 3339: arrived at or after) keep only some, all given must hold."""
    pages = await run_in_threadpool(store.inbox.list_pages, limit, recipients=tuple(to or ()),
                                    incident_ids=tuple(incident or ()), status=status,
                                    since=since.timestamp() if since is not None else None)
    return {"pages": pages}
