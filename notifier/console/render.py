"""The console's Jinja2 environment and `render(request, name, status=200, **context)`.

Autoescaped HTML; templates are looked up first in the folder given to `console_environment` (a team's
overrides: a file there replaces the packaged one of the same name) and then in `console/templates/`.
Every template sees `request`, `user` (the logged-in user or None), `csrf_field()`, `now` (the
notifier's clock) and the filters `when` (a short UTC time), `ago` (relative to now), `left` (time left
to a due time, or how long ago it passed) and `event_text` (a timeline event in the words of `vigil
incidents show`).
"""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

from fastapi import Request
from fastapi.responses import HTMLResponse
from jinja2 import ChoiceLoader, Environment, FileSystemLoader, select_autoescape
from markupsafe import Markup

from vigil.common.times import parse_time
from vigil.notifier.incident_text import event_text

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
    page = env.get_template(template_name).render(
        request=request, user=getattr(request.state, "console_user", None), now=app_state.clock(),
        csrf_field=lambda: csrf_field(request), **context)
    return HTMLResponse(page, status_code=status, headers=HEADERS)


def csrf_field(request: Request) -> Markup:
    """The hidden input every console form carries (the session's CSRF token, or the login form's)."""
    token = getattr(request.state, "csrf", None) or ""
    return Markup('<input type="hidden" name="csrf_token" value="{}">').format(token)


def seconds_of(moment) -> float | None:
    """Unix seconds of a row's time: a number as it is, an RFC 3339 text read by `parse_time`."""
    if isinstance(moment, (int, float)):
        return float(moment)
    return None if moment is None else parse_time(str(moment))


def when(moment) -> str:
    """`2026-11-23 21:50:03` (UTC), or an empty string for no time."""
    seconds = seconds_of(moment)
    if seconds is None:
        return ""
    return datetime.fromtimestamp(seconds, tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%S")


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
