"""The console's incident pages: the list (filters, live refresh) and one incident (alerts, labels, SLA
clock, timeline, notes, pages and their deliveries) with its buttons.

- `GET /console/incidents?state=&priority=&team=&node=&since=&from=&to=`: newest first, among the newest
  MAX_ROWS. `state` is triggered, acknowledged, resolved or `open` (not resolved); `node` matches a
  substring of the `node`, `instance` or `hostname` label; `since` a duration (`6h`, `7d`) back from now;
  `from` and `to` UTC days (`2026-11-23`, both included) the incident opened in.
- `GET /console/incidents/rows?…`: the same rows alone, an HTML fragment; the list page's script
  (`static/live.js`) fetches it every few seconds and swaps the table body.
- `GET /console/incidents/{id}/version`: `STATE:EVENTS` (plain text); the incident page's script polls it
  and offers a reload when someone else changed the incident (it never reloads by itself: a note being
  typed is kept).
- `GET /console/incidents/{id}`; `POST …/{id}/ack|resolve|escalate|note` (CSRF-checked form; the actor
  is the logged-in user) run `engine/actions.py` and come back to the page (303), or show the page with
  the reason when the action cannot happen now (409).
"""

from __future__ import annotations

import functools

from datetime import date, datetime, timedelta, timezone

from fastapi import APIRouter, Request
from fastapi.responses import PlainTextResponse, RedirectResponse
from starlette.concurrency import run_in_threadpool

from vigil.common.durations import parse_duration
from vigil.notifier.read_models import IncidentId, incident_detail
from vigil.notifier.console.auth import CheckedForm, ConsoleUser
from vigil.notifier.console.render import seconds_of, render
from vigil.notifier.engine import actions
from vigil.notifier.incident_text import window_text
from vigil.notifier.postmortem.page_fate import page_results

router = APIRouter(prefix="/console", include_in_schema=False)
STATES = ("open", "triggered", "acknowledged", "resolved")
PRIORITIES = ("P1", "P2", "P3", "P4", "P5")
SINCE = ("1h", "6h", "24h", "7d", "30d")
NODE_LABELS = ("node", "instance", "hostname", "Hostname")
MAX_ROWS = 500
REFRESH_S = 5
ACTIONS = {"ack": (actions.acknowledge, "acknowledged"), "resolve": (actions.resolve, "resolved"),
           "escalate": (actions.escalate_now, "escalated")}
CONFIRMED = {"escalate"}  # pages somebody else at once: the console asks "sure?" first


def node_of(labels: dict) -> str:
    return next((labels[name] for name in NODE_LABELS if labels.get(name)), "")


def _filters(request: Request) -> tuple[dict, list[str]]:
    """The filters in the query string, cleaned; and what was wrong with them."""
    query, problems = request.query_params, []
    chosen = {name: query.get(name, "").strip() for name in ("state", "priority", "team", "node", "since", "from", "to")}
    if chosen["state"] not in ("", *STATES):
        problems.append(f"unknown state {chosen['state']!r}")
        chosen["state"] = ""
    if chosen["priority"] not in ("", *PRIORITIES):
        problems.append(f"unknown priority {chosen['priority']!r}")
        chosen["priority"] = ""
    if chosen["since"]:
        try:
            parse_duration(chosen["since"])
        except ValueError as exc:
            problems.append(str(exc))
            chosen["since"] = ""
    for end in ("from", "to"):
        if chosen[end] and _day_start(chosen[end]) is None:
            problems.append(f"{end}: {chosen[end]!r} is not a day like 2026-11-23")
            chosen[end] = ""
    return chosen, problems


def _day_start(text: str) -> float | None:
    """UNIX seconds at 00:00 UTC of the day `text` (YYYY-MM-DD), or None."""
    try:
        day = date.fromisoformat(text)
    except ValueError:
        return None
    return datetime(day.year, day.month, day.day, tzinfo=timezone.utc).timestamp()


def matching_incidents(store, chosen: dict, now: float) -> list[dict]:
    """The incidents the filters select (at most MAX_ROWS), most urgent first (`by_urgency`)."""
    state = chosen["state"] if chosen["state"] in ("triggered", "acknowledged", "resolved") else None
    found = store.notifications.list_incidents(MAX_ROWS, state, chosen["priority"] or None, chosen["team"] or None)
    if chosen["state"] == "open":
        found = [i for i in found if i["state"] != "resolved"]
    if chosen["node"]:
        wanted = chosen["node"].lower()
        found = [i for i in found if wanted in node_of(i["labels"]).lower()]
    if chosen["since"]:
        start = now - parse_duration(chosen["since"])
        found = [i for i in found if seconds_of(i["opened_at"]) >= start]
    if chosen["from"]:
        found = [i for i in found if seconds_of(i["opened_at"]) >= _day_start(chosen["from"])]
    if chosen["to"]:
        end = _day_start(chosen["to"]) + timedelta(days=1).total_seconds()
        found = [i for i in found if seconds_of(i["opened_at"]) < end]
    for incident in found:
        incident["node"] = node_of(incident["labels"])
    return sorted(found, key=by_urgency)


_STATE_ORDER = {"triggered": 0, "acknowledged": 1, "resolved": 2}


def by_urgency(incident: dict) -> tuple:
    """Open incidents before resolved ones; open ones by priority (P1 first), unacknowledged before
    acknowledged, then by the time left on their SLA (the acknowledge target, once acknowledged the
    resolve target), then the newest; resolved ones newest first. A P1 never hides among P3s."""
    state = _STATE_ORDER.get(incident["state"], 2)
    opened = -(seconds_of(incident["opened_at"]) or 0.0)
    if state == 2:
        return (1, "", 0, 0.0, opened)
    due = incident.get("ack_due_at") if state == 0 else incident.get("resolve_due_at")
    return (0, incident.get("priority") or "P9", state, seconds_of(due) if due else float("inf"), opened)


async def _rows(request: Request) -> tuple[dict, list[str], list[dict]]:
    chosen, problems = _filters(request)
    found = await run_in_threadpool(matching_incidents, request.app.state.store, chosen, request.app.state.clock())
    return chosen, problems, found


@router.get("/incidents")
async def incident_list(request: Request, _user: ConsoleUser):
    chosen, problems, found = await _rows(request)
    teams = sorted(request.app.state.oncall.teams)
    return render(request, "incidents.html", incidents=found, chosen=chosen, problems=problems, teams=teams,
                  states=STATES, priorities=PRIORITIES, since_choices=SINCE, refresh_s=REFRESH_S,
                  query=request.url.query)


@router.get("/incidents/rows")
async def incident_rows(request: Request, _user: ConsoleUser):
    _chosen, _problems, found = await _rows(request)
    return render(request, "incidents_rows.html", incidents=found)


def sla_clock(incident: dict, now: float) -> list[dict]:
    """Each target (acknowledge, resolve): when it is due, its status and the time left or over."""
    clock = []
    for which, label, done_at in (("ack", "Acknowledge", incident.get("acknowledged_at")),
                                  ("resolve", "Resolve", incident.get("resolved_at"))):
        due, status = incident.get(f"{which}_due_at"), (incident.get("sla") or {}).get(which)
        if due is None:
            continue
        due_s = seconds_of(due)
        if status == "pending":
            remaining = due_s - now
        else:
            remaining = due_s - seconds_of(done_at) if done_at else due_s - now
        paused = incident.get("escalation_paused") if which == "ack" and status == "pending" else None
        clock.append(dict(label=label, due=due, status=status, remaining=remaining, done_at=done_at,
                          paused=window_text(paused) if paused else None, until=(paused or {}).get("until")))
    return clock


def version_of(incident: dict, timeline: list[dict]) -> str:
    """What changes whenever anyone acts on the incident: its state and how many events it has."""
    return f"{incident['state']}:{len(timeline)}"


@router.get("/incidents/{incident_id}/version")
async def incident_version(request: Request, incident_id: IncidentId, _user: ConsoleUser):
    store = request.app.state.store
    incident = await run_in_threadpool(store.notifications.incident, incident_id)
    if incident is None:
        return PlainTextResponse("gone", status_code=404)
    timeline = await run_in_threadpool(store.timeline.of, incident_id)
    return PlainTextResponse(version_of(incident, timeline), headers={"Cache-Control": "no-store"})


async def _incident_page(request: Request, incident_id: int, status: int = 200, notice: str | None = None,
                         confirm: str | None = None):
    store = request.app.state.store
    found = await run_in_threadpool(incident_detail, store, incident_id)
    if found is None:
        return render(request, "error.html", status=404, title="No such incident",
                      message=f"Incident #{incident_id} does not exist on this notifier.")
    now = request.app.state.clock()
    return render(request, "incident.html", status=status, incident=found, node=node_of(found["labels"]),
                  sla=sla_clock(found, now), notice=notice, done=request.query_params.get("done"), confirm=confirm,
                  version=version_of(found, found["timeline"]), refresh_s=REFRESH_S,
                  notes=[e for e in found["timeline"] if e["kind"] == "note"],
                  fates=page_results(found["pages"], found["timeline"], found["state"] == "resolved", seconds_of))


@router.get("/incidents/{incident_id}")
async def incident_page(request: Request, incident_id: IncidentId, _user: ConsoleUser):
    return await _incident_page(request, incident_id)


async def _act(request: Request, incident_id: int, user: str, run, done: str):
    try:
        if run is actions.escalate_now:  # the acknowledge target's length is the on-call file's
            run = functools.partial(run, oncall=request.app.state.oncall)
        await run_in_threadpool(run, request.app.state.store, incident_id, user, request.app.state.clock())
    except actions.IncidentNotFound:
        return await _incident_page(request, incident_id)
    except actions.TransitionRefused as refused:
        return await _incident_page(request, incident_id, status=409, notice=f"Nothing was done: {refused.reason}.")
    return RedirectResponse(f"/console/incidents/{incident_id}?done={done}", status_code=303)


@router.post("/incidents/{incident_id}/note")
async def add_note(request: Request, incident_id: IncidentId, user: ConsoleUser, form: CheckedForm):
    text = str(form.get("text", ""))

    def note(store, incident_id: int, by: str, now: float) -> dict:
        return actions.add_note(store, incident_id, by, text, now)
    return await _act(request, incident_id, user, note, "noted")


@router.post("/incidents/{incident_id}/mark")
async def mark(request: Request, incident_id: IncidentId, user: ConsoleUser, form: CheckedForm):
    verdict = str(form.get("verdict", "noisy"))

    def mark_page(store, incident_id: int, by: str, now: float) -> dict:
        return actions.mark(store, incident_id, by, verdict, now)
    return await _act(request, incident_id, user, mark_page, "marked")


def _action_route(verb: str) -> None:
    run, done = ACTIONS[verb]

    async def act(request: Request, incident_id: IncidentId, user: ConsoleUser, form: CheckedForm):
        if verb in CONFIRMED and form.get("confirm") != "yes":  # a thumb slipped? ask first, without JavaScript
            return await _incident_page(request, incident_id, confirm=verb)
        return await _act(request, incident_id, user, run, done)
    router.add_api_route(f"/incidents/{{incident_id}}/{verb}", act, methods=["POST"], name=f"console_{verb}")


for _verb in ACTIONS:
    _action_route(_verb)
