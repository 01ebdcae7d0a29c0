"""What the API and the console both show, read from the store and the on-call file: an incident with
its alerts, timeline and pages; the on-call file's maintenance windows; the on-call health report of a
period. The API's routes (`api/`) answer them as JSON, the console (`console/`) renders them; neither
imports the other's routes."""

from __future__ import annotations

from typing import Annotated

from fastapi import Path

from vigil.common.click_types import MAX_ROW_ID
from vigil.notifier.analytics.health import report, working_hours_of
from vigil.notifier.analytics.queries import incidents_opened
from vigil.notifier.core.rejected import Rejected
from vigil.notifier.store import Store
from vigil.notifier.store.engine import reading
from vigil.notifier.store.notifications import latest_payload
from vigil.notifier.store.timeline import pause_of
from vigil.common.times import rfc3339
from vigil.oncall.model import OncallConfig
from vigil.oncall.schedule_model import zone_named
from vigil.oncall.schedules import moment_at, to_unix

# an incident's id in a path, /api/v1/incidents/{id} and /console/incidents/{id} alike
IncidentId = Annotated[int, Path(ge=1, le=MAX_ROW_ID)]
DAY_S = 86400.0
DEFAULT_S = 7 * DAY_S  # the report's period when none is given
MAX_RANGE_S = 367 * DAY_S


def incident_detail(store: Store, incident_id: int) -> dict | None:
    """The incident with its `alerts`, `timeline` and `pages`; None if there is no such incident."""
    incident = store.notifications.incident(incident_id)
    if incident is None:
        return None
    with reading(store.engine) as conn:
        payload = latest_payload(conn, incident_id)
    alerts = [] if payload is None else [
        dict(status=a.status, labels=a.labels, summary=a.annotations.get("summary", ""), startsAt=a.startsAt,
             endsAt=a.endsAt, fingerprint=a.fingerprint) for a in payload.alerts]
    timeline = store.timeline.of(incident_id)
    return {**incident, "alerts": alerts, "timeline": timeline, "pages": store.outbox.pages_of(incident_id),
            "escalation_paused": pause_of(timeline)}


def config_windows(config: OncallConfig, now: float, include_past: bool) -> list[dict]:
    """The on-call file's windows, shaped like the API's (no id: they end when the file says)."""
    zone = zone_named(config.timezone)
    found = []
    for window in config.maintenance:
        start, end = to_unix(window.start, zone), to_unix(window.end, zone)
        if include_past or end > now:
            found.append(dict(id=None, source="on-call file", match=dict(window.match), starts_at=rfc3339(start),
                              ends_at=rfc3339(end), reason=window.reason, created_by=None, created_at=None,
                              ended_at=None, active=start <= now < end))
    return found


def oncall_health(store: Store, oncall: OncallConfig, start: float, end: float, team: str | None = None) -> dict:
    """The report of [start, end); an unknown `team` is refused (404)."""
    if team is not None and team not in oncall.teams:
        raise Rejected(404, "unknown_team", f"unknown team {team!r}")
    return report(incidents_opened(store.engine, start, end, team), working_hours_of(oncall), start, end, team)


def period(oncall: OncallConfig, from_: str | None, to: str | None, now: float) -> tuple[float, float]:
    """[start, end) from the texts (default: the 7 days up to now); 422 when unreadable or out of range."""
    zone = zone_named(oncall.timezone)
    end = _time(to, zone, now, "to") if to is not None else now
    start = _time(from_, zone, now, "from") if from_ is not None else max(0.0, end - DEFAULT_S)
    if not start < end <= start + MAX_RANGE_S:
        raise Rejected(422, "invalid_range", "`to` must be after `from`, at most 367 days later")
    return start, end


def _time(text: str, zone, now: float, name: str) -> float:
    try:
        return moment_at(text, zone, now)
    except ValueError as exc:
        raise Rejected(422, "invalid_time", f"{name}: {exc}") from None
