"""The console's Jinja2 environment and `render(request, name, status=200, **context)`.

Autoescaped HTML; templates are looked up first in the folder given to `console_environment` (a team's
overrides: a file there replaces the packaged one of the same name) and then in `console/templates/`.
Every template sees `request`, `user` (the logged-in user or None), `csrf_field()`, `now` (the
notifier's clock), `zone` (the viewer's time zone: the one they picked on the on-call pages, else their
own from the on-call file, else the file's) and the filters `when` (a time in the viewer's zone, the
zone said), `ago` (relative to now), `left` (time left to a due time, or how long ago it passed) and
`event_text` (a timeline event in the words of `vigil incidents show`).
"""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from zoneinfo import ZoneInfo

from fastapi import Request
from fastapi.responses import HTMLResponse
from jinja2 import ChoiceLoader, Environment, FileSystemLoader, pass_context, select_autoescape
from markupsafe import Markup

from vigil.common.times import parse_time, rfc3339, utc_text
from vigil.notifier.incident_text import event_text
from vigil.oncall.plan import person_zone
from vigil.oncall.schedule_model import zone_named

TEMPLATES = Path(__file__).parent / "templates"
# console pages: never cached, never framed; scripts and styles only from this notifier
HEADERS = {"Cache-Control": "no-store", "X-Frame-Options": "DENY", "Referrer-Policy": "same-origin",
           "X-Content-Type-Options": "nosniff",
           "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; "
                                      "form-action 'self'; frame-ancestors 'none'"}


def console_environment(overrides: Path | None = None) -> Environment:
    loaders = [FileSystemLoader(str(overrides))] if overrides else []
    env = Environment(loader=ChoiceLoader([*loaders, FileSystemLoader(str(TEMPLATES))]),
                      autoescape=select_autoescape(default=True, default_for_string=True), trim_blocks=True,
                      lstrip_blocks=True)
    env.filters.update(when=when, ago=ago, left=left, duration=duration, event_text=event_text)
    return env


def render(request: Request, template_name: str, status: int = 200, **context) -> HTMLResponse:
    app_state = request.app.state
    env = getattr(app_state, "console_templates", None)
    if env is None:
        env = app_state.console_templates = console_environment()
    user = getattr(request.state, "console_user", None)
    page = env.get_template(template_name).render(
        request=request, user=user, now=app_state.clock(), csrf_field=lambda: csrf_field(request),
        **{"zone": page_zone(request, user), **context})
    return HTMLResponse(page, status_code=status, headers=HEADERS)


ZONE_COOKIE = "vigil_console_tz"  # the zone a viewer picked on the on-call pages, kept for every page
MINE = "mine"  # the picker's "my own zone"


def page_zone(request: Request, user: str | None) -> ZoneInfo:
    """The zone the console shows times in for this viewer: the one they picked (a cookie), else their own
    (the on-call file's person, team, file zone), else the file's; UTC without an on-call file."""
    config = getattr(request.app.state, "oncall", None)
    choice = request.cookies.get(ZONE_COOKIE, "").strip()
    try:
        if choice and choice != MINE:
            return zone_named(choice)
        if config is not None and user in config.people:
            return person_zone(config, user)
        return zone_named(config.timezone) if config is not None else ZoneInfo("UTC")
    except ValueError:  # a zone no longer known: the file's
        return ZoneInfo("UTC")


def csrf_field(request: Request) -> Markup:
    """The hidden input every console form carries (the session's CSRF token, or the login form's)."""
    token = getattr(request.state, "csrf", None) or ""
    return Markup('<input type="hidden" name="csrf_token" value="{}">').format(token)


def seconds_of(moment) -> float | None:
    """Unix seconds of a row's time: a number as it is, an RFC 3339 text read by `parse_time`."""
    if isinstance(moment, (int, float)):
        return float(moment)
    return None if moment is None else parse_time(str(moment))


@pass_context
def when(context, moment) -> str:
    """`2026-11-23 21:50:03 IST` in the page's `zone` (UTC without one), or an empty string for no time."""
    seconds = seconds_of(moment)
    if seconds is None:
        return ""
    zone = context.get("zone") or timezone.utc
    try:
        return datetime.fromtimestamp(seconds, tz=zone).strftime("%Y-%m-%d %H:%M:%S %Z")
    except (OverflowError, ValueError, OSError):  # out of the zone's range (a row stored by an older version)
        return utc_text(rfc3339(seconds))


def duration(seconds: float | None) -> str:
    """`45s`, `12m`, `3h05m`, `2d04h`."""
    if seconds is None:
        return ""
    seconds = int(abs(seconds))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m"
    if seconds < 86400:
        return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
    return f"{seconds // 86400}d{seconds % 86400 // 3600:02d}h"


def ago(moment, now: float) -> str:
    seconds = seconds_of(moment)
    return "" if seconds is None else f"{duration(now - seconds)} ago"


def left(moment, now: float) -> str:
    seconds = seconds_of(moment)
    if seconds is None:
        return ""
    return f"{duration(seconds - now)} left" if seconds > now else f"{duration(now - seconds)} over"
