"""On-call health report: `GET /api/v1/reports/oncall?from=&to=&team=` (what `vigil report oncall` prints).

`from` and `to` are UNIX seconds, an ISO time with an offset, or a local ISO time in the on-call file's
zone (`now` too); by default the last 7 days up to now, at most 367 days. The figures and the JSON
shape are `vigil.notifier.analytics.health.report`'s (`docs/oncall-health.md`).
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request
from starlette.concurrency import run_in_threadpool

from vigil.notifier.api.deps import ClockDep, QueryName, StoreDep
from vigil.notifier.read_models import oncall_health, period

router = APIRouter()

TimeText = Annotated[str | None, Query(max_length=64, description="now, UNIX seconds or an ISO time (local: the file's zone)")]


@router.get("/api/v1/reports/oncall", responses={404: {"description": "No such team."},
                                                 422: {"description": "A time or range that cannot be read."}})
async def oncall_report(request: Request, store: StoreDep, clock: ClockDep,
                        from_: Annotated[TimeText, Query(alias="from")] = None, to: TimeText = None,
                        team: Annotated[QueryName | None, Query()] = None):
    """MTTA, MTTR, pages (per person, outside working hours), SLA compliance, escalation rate, noisiest
    alerts and the acknowledged / acted-on share of the incidents opened in [from, to)."""
    oncall = request.app.state.oncall
    start, end = period(oncall, from_, to, clock())
    return await run_in_threadpool(oncall_health, store, oncall, start, end, team)


