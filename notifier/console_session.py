"""The console's session cookie on a request: whose live session it is. The console's login and every
console route use it (`console/auth.py`), and so does the one-click `open` link (`api/links.py`), which
sends a logged-in person to the console's incident page instead of the link's own."""

from __future__ import annotations

from fastapi import Request
from starlette.concurrency import run_in_threadpool

SESSION_COOKIE = "vigil_console"


async def session_user(request: Request) -> str | None:
    """The user of the request's live console session (None: no session); sets the request's CSRF token."""
    token = request.cookies.get(SESSION_COOKIE)
    if not token:
        return None
    store, clock = request.app.state.store, request.app.state.clock
    session = await run_in_threadpool(store.console_sessions.get, token, clock())
    if session is None:
        return None
    request.state.console_user, request.state.csrf, request.state.session_token = session.username, session.csrf, token
    return session.username
