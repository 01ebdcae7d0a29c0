"""The web console: server-rendered pages for on-call engineers, under `/console/` (outside `/api/`, so
no bearer token; a login session instead, `auth.py`).

Each views module exposes `router = APIRouter(prefix="/console", include_in_schema=False)`; `install`
includes those listed in VIEWS, serves `static/` and turns the auth refusals into pages. Pages render
through `render.render(request, name, **context)` with templates extending `base.html`.
"""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI
from fastapi.staticfiles import StaticFiles

from vigil.notifier.console import auth, incidents
from vigil.notifier.console import inbox_views, maintenance_views, oncall_views
from vigil.notifier.console import report_views
from vigil.notifier.console import postmortem_views
from vigil.notifier.console import push_views
from vigil.notifier.console import override_views
from vigil.notifier.console.render import console_environment

STATIC = Path(__file__).parent / "static"
VIEWS = [auth, incidents]  # each view module's `router`, one entry per module
VIEWS += [oncall_views, maintenance_views, inbox_views]
VIEWS += [report_views]
VIEWS += [postmortem_views]
VIEWS += [push_views]
VIEWS += [override_views]


def install(app: FastAPI, templates: Path | None = None) -> None:
    """Add the console to the notifier's app; `templates`: a folder whose files override the packaged ones."""
    app.state.console_templates = console_environment(templates)
    app.state.login_throttle = auth.LoginThrottle(lambda: app.state.store.login_failures)
    app.add_exception_handler(auth.LoginRequired, auth.login_redirect)
    app.add_exception_handler(auth.CsrfRefused, auth.csrf_refusal)
    app.add_exception_handler(auth.FormRefused, auth.form_refusal)
    app.mount("/console/static", StaticFiles(directory=STATIC), name="console-static")
    for module in VIEWS:
        app.include_router(module.router)
