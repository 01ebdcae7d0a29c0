"""On-call health report: `GET /api/v1/reports/oncall?from=&to=&team=` (what `vigil report oncall` prints).

`from` and `to` are UNIX seconds, an ISO time with an offset, or a local ISO time in the on-call file's
zone (`now` too); by default the last 7 days up to now, at most 367 days. The figures and the JSON
shape are `vigil.notifier.analytics.health.report`'s (`docs/oncall-health.md`).
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request
from starlette.concurrency import run_in_threadpool

from vigil.notifier.analytics.health import report, working_hours_of
from vigil.notifier.analytics.queries import incidents_opened
from vigil.notifier.api.deps import ClockDep, StoreDep
from vigil.notifier.api.parse import Rejected
from vigil.notifier.store import Store
from vigil.oncall.model import OncallConfig
from vigil.oncall.schedule_model import zone_named
from vigil.oncall.schedules import moment_at

router = APIRouter()

DAY_S = 86400.0
DEFAULT_S = 7 * DAY_S
MAX_RANGE_S = 367 * DAY_S
TimeText = Annotated[str | None, Query(max_length=64, description="now, UNIX seconds or an ISO time (local: the file's zone)")]


@router.get("/api/v1/reports/oncall", responses={404: {"description": "No such team."},
                                                 422: {"description": "A time or range that cannot be read."}})
async def oncall_report(request: Request, store: StoreDep, clock: ClockDep,
                        from_: Annotated[TimeText, Query(alias="from")] = None, to: TimeText = None,
                        team: Annotated[str | None, Query(max_length=200)] = None):
    """MTTA, MTTR, pages (per person, outside working hours), SLA compliance, escalation rate, noisiest
    alerts and the acknowledged / acted-on share of the incidents opened in [from, to)."""
    oncall = request.app.state.oncall
    start, end = period(oncall, from_, to, clock())
    return await run_in_threadpool(oncall_health, store, oncall, start, end, team)


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
