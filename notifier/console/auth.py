"""Who may use the console: login, logout, sessions and CSRF.

- Login with a person's key from the on-call file and their password (`people.<key>.password_hash`,
  Argon2id), or with the notifier's bearer token as the password (user name left empty or `token`; the
  actor is then `token`). Five failures for one user name within five minutes lock that name out for
  the rest of the window (429).
- A login creates a server-side session (`store/console_sessions.py`); the cookie `vigil_console` holds
  only its random token: HttpOnly, SameSite=Lax, Secure when the public URL is https, Path=/ (the
  one-click `open` link reads it too; `/api/` ignores it and keeps requiring the bearer token).
  Logout and expiry delete the row, so the cookie is refused from then on.
- Every console form carries the session's CSRF token (`csrf_field()` in templates); `CheckedForm`
  refuses a POST without it or with another (403). The login form, before any session exists, carries a
  token that must match a short-lived cookie (double submit).
- A console script's POST (JSON, not a form) carries the token in the `X-CSRF-Token` header instead
  (`ScriptUser`).
- `ConsoleUser` gives a route the logged-in user; without a live session a GET is redirected to
  `/console/login?next=…` and anything else answered 401.
"""

from __future__ import annotations

import hmac
import secrets
from typing import Annotated, Callable
from urllib.parse import quote

from fastapi import APIRouter, Depends, Request
from fastapi.responses import RedirectResponse, Response
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import FormData

from vigil.common.json_body import BodyRejected, check_plain_json
from vigil.notifier.console.passwords import verify_password
from vigil.notifier.store.login_failures import LoginFailures
from vigil.notifier.console_session import SESSION_COOKIE, session_user
from vigil.notifier.console.render import render

LOGIN_COOKIE = "vigil_console_login"
TOKEN_USER = "token"
HOME = "/console/incidents"
MAX_FAILURES, FAILURE_WINDOW_S = 5, 300.0
MAX_CLIENT_FAILURES = 30  # per client address and window, whatever names it tries
MAX_FIELD = 1024  # longer user names or passwords are wrong without being hashed

router = APIRouter(prefix="/console", include_in_schema=False)


class LoginRequired(Exception):
    """No live session: a GET goes to the login page, anything else gets 401."""


class FormRefused(Exception):
    """A console form holding what no reader can store (a NUL, a lone surrogate): 422, as the API says."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


class CsrfRefused(Exception):
    """A console POST without the session's CSRF token: 403."""


async def _console_user(request: Request) -> str:
    user = await session_user(request)
    if user is None:
        raise LoginRequired()
    return user


ConsoleUser = Annotated[str, Depends(_console_user)]


def _same(given, expected: str | None) -> bool:
    return isinstance(given, str) and bool(expected) and hmac.compare_digest(given.encode(), expected.encode())


async def _checked_form(request: Request, user: ConsoleUser) -> FormData:
    form = await request.form()
    if not _same(form.get("csrf_token"), request.state.csrf):
        raise CsrfRefused()
    try:  # the same check every JSON body of the API gets: what the console stores, a reader can read back
        check_plain_json({key: value for key, value in form.multi_items() if isinstance(value, str)})
    except BodyRejected as exc:
        raise FormRefused(str(exc)) from None
    return form


CheckedForm = Annotated[FormData, Depends(_checked_form)]


async def _checked_script_post(request: Request, user: ConsoleUser) -> str:
    """A POST a console script sends (JSON, no form): the session's CSRF token in `X-CSRF-Token`."""
    if not _same(request.headers.get("x-csrf-token"), request.state.csrf):
        raise CsrfRefused()
    return user


# the user of a console script's POST, its CSRF header checked
ScriptUser = Annotated[str, Depends(_checked_script_post)]


def login_redirect(request: Request, _exc: LoginRequired) -> Response:
    if request.method in ("GET", "HEAD"):
        target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
        return RedirectResponse(f"/console/login?next={quote(target, safe='')}", status_code=303)
    return render(request, "error.html", status=401, title="Logged out",
                  message="Your console session has ended (logged out or expired): log in again.")


def form_refusal(request: Request, exc: FormRefused) -> Response:
    return render(request, "error.html", status=422, title="Nothing was saved",
                  message=f"The form holds what cannot be stored: {exc.reason}. Go back and remove it.")


def csrf_refusal(request: Request, _exc: CsrfRefused) -> Response:
    return render(request, "error.html", status=403, title="Refused",
                  message="This form was not sent from a console page of your session (missing or wrong CSRF "
                          "token). Reload the page and try again.")


class LoginThrottle:
    """Failed logins, kept in the database (every notifier on it counts the same, a restart forgets
    nothing): at most MAX_FAILURES in FAILURE_WINDOW_S per account — one key however the account was
    named, the API token's login included — and at most MAX_CLIENT_FAILURES per client address, so one
    client guessing many names pays for it too (each guess costs an Argon2 hash)."""

    def __init__(self, failures: Callable[[], LoginFailures]):
        self._store = failures  # the store opens with the app: looked up when a login comes

    @property
    def _failures(self) -> LoginFailures:
        return self._store()

    def wait_s(self, username: str, client: str, now: float) -> float:
        """Seconds until `username` may try again from `client` (0: now)."""
        since = now - FAILURE_WINDOW_S
        waits = [0.0]
        for key, most in ((account_key(username), MAX_FAILURES), (client_key(client), MAX_CLIENT_FAILURES)):
            count, oldest = self._failures.recent(key, since)
            if count >= most and oldest is not None:
                waits.append(oldest + FAILURE_WINDOW_S - now)
        return max(waits)

    def failed(self, username: str, client: str, now: float) -> None:
        self._failures.add([account_key(username), client_key(client)], now, now - FAILURE_WINDOW_S)

    def succeeded(self, username: str) -> None:
        self._failures.clear(account_key(username))


def account_key(username: str) -> str:
    """One key per account: the name as the on-call file has it, any case; the API token's login (an
    empty name or TOKEN_USER) is one account."""
    name = username.strip().lower()
    return f"user:{TOKEN_USER if name in ('', TOKEN_USER.lower()) else name[:MAX_FIELD]}"


def client_key(client: str) -> str:
    return f"client:{client[:100]}"


def _secure(request: Request) -> bool:
    return (request.app.state.settings.public_url or "").startswith("https://")


def _safe_next(target: str | None) -> str:
    """Only a console path of this notifier (never `//elsewhere` or a full URL)."""
    if target and target.startswith("/console/") and not target.startswith("//") and "\\" not in target:
        return target
    return HOME


def _authenticate(request: Request, username: str, password: str) -> str | None:
    """The user this password logs in, or None."""
    state = request.app.state
    if len(username) > MAX_FIELD or len(password) > MAX_FIELD:
        return None
    if username in ("", TOKEN_USER):
        return TOKEN_USER if _same(password, state.settings.token) else None
    person = state.oncall.people.get(username)
    return username if verify_password(person.password_hash if person else None, password) else None


@router.get("/login")
async def login_page(request: Request, next: str | None = None):
    request.state.csrf = secrets.token_urlsafe(24)
    page = render(request, "login.html", next=_safe_next(next), error=None)
    page.set_cookie(LOGIN_COOKIE, request.state.csrf, max_age=3600, path="/console/login", httponly=True,
                    samesite="strict", secure=_secure(request))
    return page


@router.post("/login")
async def login(request: Request):
    form = await request.form()
    if not _same(form.get("csrf_token"), request.cookies.get(LOGIN_COOKIE)):
        raise CsrfRefused()
    username, password = str(form.get("username", "")).strip(), str(form.get("password", ""))
    target = _safe_next(str(form.get("next", "")))
    state = request.app.state
    now = state.clock()
    request.state.csrf = form.get("csrf_token")
    client = request.client.host if request.client else "unknown"
    wait = await run_in_threadpool(state.login_throttle.wait_s, username, client, now)
    if wait > 0:
        return render(request, "login.html", status=429, next=target, username=username,
                      error=f"Too many failed logins for this user or from this address: try again in "
                            f"{int(wait) + 1} s.")
    user = await run_in_threadpool(_authenticate, request, username, password)
    if user is None:
        await run_in_threadpool(state.login_throttle.failed, username, client, now)
        return render(request, "login.html", status=401, next=target, username=username,
                      error="Wrong user name or password.")
    await run_in_threadpool(state.login_throttle.succeeded, username)
    token, session = await run_in_threadpool(state.store.console_sessions.create, user, now)
    response = RedirectResponse(target, status_code=303)
    response.set_cookie(SESSION_COOKIE, token, max_age=int(session.expires_at - now), path="/",
                        httponly=True, samesite="lax", secure=_secure(request))
    response.delete_cookie(LOGIN_COOKIE, path="/console/login")
    return response


@router.post("/logout")
async def logout(request: Request, _form: CheckedForm):
    await run_in_threadpool(request.app.state.store.console_sessions.delete, request.state.session_token)
    response = RedirectResponse("/console/login", status_code=303)
    response.delete_cookie(SESSION_COOKIE, path="/", httponly=True, samesite="lax", secure=_secure(request))
    return response


@router.get("")
@router.get("/")
async def home(_user: ConsoleUser):
    return RedirectResponse(HOME, status_code=303)
