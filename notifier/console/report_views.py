"""Console page of the on-call health report: `/console/reports?from=&to=&team=`.

The figures are `GET /api/v1/reports/oncall`'s (the same computation, `vigil.notifier.analytics`), shown
as tables and as inline SVG charts drawn here on the server (`report_charts.py`). `from`/`to` take the
forms of `vigil report oncall` (default: the 7 days up to now); a time, range or team that cannot be
used answers 4xx with the page and the reason.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request
from starlette.concurrency import run_in_threadpool

from vigil.notifier.read_models import oncall_health, period
from vigil.notifier.core.rejected import Rejected
from vigil.notifier.console.auth import ConsoleUser
from vigil.notifier.console.render import render
from vigil.notifier.console.report_charts import noise_chart, pages_chart, response_chart

router = APIRouter(prefix="/console", include_in_schema=False)
Text = Annotated[str | None, Query(max_length=64)]


@router.get("/reports")
async def reports_page(request: Request, user: ConsoleUser, from_: Annotated[Text, Query(alias="from")] = None,
                       to: Text = None, team: Annotated[str | None, Query(max_length=200)] = None):
    config, store = request.app.state.oncall, request.app.state.store
    chosen = dict(from_=from_ or "", to=to or "", team=team or "")
    try:
        start, end = period(config, from_ or None, to or None, request.app.state.clock())
        found = await run_in_threadpool(oncall_health, store, config, start, end, team or None)
    except Rejected as exc:
        return render(request, "report.html", status=exc.status, problems=[exc.message], report=None,
                      chosen=chosen, teams=sorted(config.teams))
    charts = dict(pages=pages_chart(found["people"]), noise=noise_chart(found["noisiest_alerts"]),
                  response=response_chart(found["teams"] or found["priorities"],
                                          "team" if found["teams"] else "priority"))
    groups = ([("all", found["overall"])] + [(f"team {t['team']}", t) for t in found["teams"]]
              + [(f"priority {p['priority']}", p) for p in found["priorities"]])
    return render(request, "report.html", problems=[], report=found, groups=groups, charts=charts, chosen=chosen,
                  teams=sorted(config.teams))
