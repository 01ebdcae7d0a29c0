"""Heartbeats: `POST /api/v1/heartbeat/{name}` (a beat: Alertmanager's Watchdog webhook, or an empty
body from any dead-man's switch; same bearer token as the webhook) and `GET /api/v1/heartbeats`.

A beat of a heartbeat the notifier does not watch is a 404 (nothing is recorded); a resolved
notification (the Watchdog stopped firing) is not a beat: answered 200 `ignored`, so Alertmanager does
not retry it, and the silence that follows pages when the timeout passes.
"""

from __future__ import annotations

from fastapi import APIRouter, Path, Request
from starlette.concurrency import run_in_threadpool

from vigil.notifier.api.deps import ClockDep
from vigil.notifier.api.openapi import HEARTBEAT_BODY
from vigil.notifier.core.rejected import Rejected
from vigil.notifier.ingest.parse import heartbeat_body
from vigil.notifier.engine.heartbeat import HeartbeatMonitor
from vigil.notifier.store.heartbeats import HeartbeatRow
from vigil.common.times import rfc3339

router = APIRouter()
HEARTBEAT_PATH = "/api/v1/heartbeat/{name}"
Name = Path(max_length=100)


@router.post(HEARTBEAT_PATH, openapi_extra=HEARTBEAT_BODY)
async def beat(request: Request, name: str = Name):
    monitor: HeartbeatMonitor = request.app.state.heartbeats
    if name not in monitor.specs:
        known = ", ".join(sorted(monitor.specs)) or "none (vigil notifier serve --heartbeat)"
        raise Rejected(404, "unknown_heartbeat", f"unknown heartbeat {name!r}; watched: {known}")
    payload = await heartbeat_body(request)
    if payload is not None and payload.status != "firing":
        return {"status": "ignored", "name": name,
                "reason": "a resolved notification is not a beat (whatever sent it stopped firing)"}
    done = await run_in_threadpool(monitor.heard, name)
    return {"status": "heard", "name": name, "last_seen_at": rfc3339(done.row.last_seen_at),
            "resolved_incident_id": done.resolved_incident}


@router.get("/api/v1/heartbeats")
async def list_heartbeats(request: Request, clock: ClockDep):
    monitor: HeartbeatMonitor = request.app.state.heartbeats
    rows = await run_in_threadpool(monitor.rows)
    now = clock()
    return {"heartbeats": [heartbeat_json(name, spec.timeout_s, spec.alert_labels(), rows.get(name), now)
                           for name, spec in sorted(monitor.specs.items())]}


def heartbeat_json(name: str, timeout_s: float, labels: dict, row: HeartbeatRow | None, now: float) -> dict:
    """A heartbeat as the API shows it; `state`: `alive` (heard within its timeout), `waiting` (not heard
    yet, its first timeout still running), `missing` (its incident is open)."""
    if row is None:
        return dict(name=name, timeout_s=timeout_s, labels=labels, state="waiting", last_seen_at=None,
                    watching_since=None, deadline=None, missing_since=None, incident_id=None, beats=0,
                    silent_for_s=None)
    state = "missing" if row.missing_since is not None else "alive" if row.last_seen_at is not None else "waiting"
    return dict(name=name, timeout_s=timeout_s, labels=labels, state=state, last_seen_at=rfc3339(row.last_seen_at),
                watching_since=rfc3339(row.watching_since),
                deadline=None if state == "missing" else rfc3339(row.deadline(timeout_s)),
                missing_since=rfc3339(row.missing_since), incident_id=row.incident_id, beats=row.beats,
                silent_for_s=round(now - (row.last_seen_at or row.watching_since), 3))

