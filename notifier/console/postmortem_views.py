"""The incident's postmortem from the console: `GET /console/incidents/{id}/postmortem?format=html|md|pdf`
(default html, shown in the browser; md and pdf download as `incident-ID-postmortem.md|pdf`).

Charts come from the Prometheus the notifier was given (`--prometheus-url`; `vigil up` passes its own);
without one the postmortem says so and has no charts. Templates: `--postmortem-templates DIR` replaces
the shipped ones (docs/postmortems.md).
"""

from __future__ import annotations

from fastapi import APIRouter, Request, Response
from starlette.concurrency import run_in_threadpool

from vigil.common.prometheus_api import PrometheusClient
from vigil.notifier.read_models import IncidentId, incident_detail
from vigil.notifier.console.auth import ConsoleUser
from vigil.notifier.console.render import render
from vigil.notifier.postmortem import CONTENT_TYPES, render_postmortem

router = APIRouter(prefix="/console", include_in_schema=False)
RELATED_SEARCH_LIMIT = 5000  # related incidents are searched among the newest this many
PROMETHEUS_TIMEOUT_S = 5.0


def _postmortem(app, incident_id: int, fmt: str, now: float) -> tuple[bytes, str] | None:
    store, settings = app.state.store, app.state.settings
    found = incident_detail(store, incident_id)
    if found is None:
        return None
    others = store.notifications.list_incidents(RELATED_SEARCH_LIMIT)
    prometheus = (PrometheusClient(settings.prometheus_url, timeout=PROMETHEUS_TIMEOUT_S)
                  if settings.prometheus_url else None)
    return render_postmortem(found, others, fmt, prometheus, now, settings.postmortem_templates)


@router.get("/incidents/{incident_id}/postmortem")
async def postmortem(request: Request, incident_id: IncidentId, _user: ConsoleUser, format: str = "html"):
    if format not in CONTENT_TYPES:
        return render(request, "error.html", status=400, title="Unknown format",
                      message=f"format must be one of {', '.join(CONTENT_TYPES)}, not {format!r}.")
    made = await run_in_threadpool(_postmortem, request.app, incident_id, format, request.app.state.clock())
    if made is None:
        return render(request, "error.html", status=404, title="No such incident",
                      message=f"Incident #{incident_id} does not exist on this notifier.")
    body, content_type = made
    headers = {} if format == "html" else {
        "Content-Disposition": f'attachment; filename="incident-{incident_id}-postmortem.{format}"'}
    return Response(body, media_type=content_type, headers=headers)
