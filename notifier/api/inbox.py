"""The local inbox: `POST /api/v1/inbox` (pages arriving through apprise) and `GET /api/v1/inbox`."""

from __future__ import annotations

from fastapi import APIRouter, Request
from starlette.concurrency import run_in_threadpool

from vigil.notifier.api.deps import ClockDep, ListLimit, StoreDep
from vigil.notifier.api.openapi import INBOX_BODY
from vigil.notifier.api.parse import Rejected, page_arrival
from vigil.notifier.delivery.inbox_sender import INBOX_PATH

router = APIRouter()


@router.post(INBOX_PATH, openapi_extra=INBOX_BODY)
async def inbox_arrival(request: Request, store: StoreDep, clock: ClockDep):
    page = await page_arrival(request)
    page_id = await run_in_threadpool(store.inbox.record_page, page.delivery_id, page.title, page.body, clock())
    if page_id is None:
        raise Rejected(422, "invalid_payload", f"no outbox delivery {page.delivery_id}")
    return {"status": "recorded", "id": page_id}


@router.get(INBOX_PATH)
async def inbox(store: StoreDep, limit: ListLimit = 500):
    return {"pages": await run_in_threadpool(store.inbox.list_pages, limit)}
