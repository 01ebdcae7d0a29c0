"""Every refusal of the notifier is `{"error": "<one readable sentence>"}` (docs/notifier.md), also the
ones FastAPI and Starlette answer themselves: a path or query parameter that does not validate
(`RequestValidationError`, 422), an unknown route (404) or a method the route does not take (405).
Their status stays as the framework chose it; only the body is worded for a person."""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException

# where a parameter came from, as a person calls it
_WHERE = {"path": "", "query": "", "header": "header ", "cookie": "cookie ", "body": "body field "}


def install_error_handlers(app: FastAPI) -> None:
    app.add_exception_handler(RequestValidationError, _invalid_request)
    app.add_exception_handler(HTTPException, _http_refusal)


async def _invalid_request(request: Request, exc: RequestValidationError) -> JSONResponse:
    reasons = list(dict.fromkeys(_sentence(request, error) for error in exc.errors()))
    return JSONResponse({"error": "; ".join(reasons) or "invalid request"}, status_code=422)


async def _http_refusal(request: Request, exc: HTTPException) -> JSONResponse:
    if exc.status_code == 404 and exc.detail == "Not Found":
        reason = f"no such endpoint {request.method} {request.url.path}"
    elif exc.status_code == 405:
        allowed = (exc.headers or {}).get("Allow") or (exc.headers or {}).get("allow")
        reason = f"{request.method} is not allowed on {request.url.path}" + (f" (allowed: {allowed})" if allowed else "")
    else:
        reason = exc.detail if isinstance(exc.detail, str) else str(exc.detail)
    return JSONResponse({"error": reason}, status_code=exc.status_code, headers=exc.headers)


def _sentence(request: Request, error: dict) -> str:
    """One validation error of pydantic as a sentence: `limit must be between 1 and 5000, got 0`."""
    loc = [str(part) for part in error.get("loc", ())]
    source, name = (loc[0], ".".join(loc[1:])) if len(loc) > 1 else ("", ".".join(loc))
    what = _WHERE.get(source, "") + (name.replace("_", " ") or "the request")
    kind, ctx, given = error.get("type", ""), error.get("ctx") or {}, error.get("input")
    got = f", got {given!r}" if isinstance(given, str) else (f", got {given}" if given is not None else "")
    if kind == "missing":
        return f"{what} is required"
    if kind == "int_parsing":
        return f"{what} must be an integer{got}"
    if kind in ("greater_than_equal", "less_than_equal", "greater_than", "less_than"):
        low, high = _bounds(request, source, loc[-1] if loc else "")
        got = f", got {given}" if given is not None else ""  # a number: no quotes
        if low is not None and high is not None:
            return f"{what} must be between {low} and {high}{got}"
        words = {"greater_than_equal": ("at least", "ge"), "less_than_equal": ("at most", "le"),
                 "greater_than": ("greater than", "gt"), "less_than": ("less than", "lt")}[kind]
        return f"{what} must be {words[0]} {ctx.get(words[1])}{got}"
    if kind == "literal_error":
        return f"{what} must be one of {ctx.get('expected')}{got}"
    if kind == "string_pattern_mismatch":
        return f"{what} must match {ctx.get('pattern')}{got}"
    if kind == "string_too_short":
        return f"{what} must not be empty" if ctx.get("min_length") == 1 else \
            f"{what} must be at least {ctx.get('min_length')} characters long"
    if kind == "string_too_long":
        return f"{what} must be at most {ctx.get('max_length')} characters long"
    message = str(error.get("msg", "is not valid"))
    return f"{what}: {message[:1].lower()}{message[1:]}{got}"


def _bounds(request: Request, source: str, name: str) -> tuple[int | None, int | None]:
    """The inclusive range the route declares for parameter `name` (e.g. `ListLimit`'s 1 … 5000)."""
    dependant = getattr(request.scope.get("route"), "dependant", None)
    params = {"path": "path_params", "query": "query_params"}.get(source)
    if dependant is None or params is None:
        return None, None
    for field in _all_params(dependant, params):
        if field.alias == name or field.name == name:
            low = high = None
            for rule in field.field_info.metadata:  # pydantic's constraint objects (ge=…, le=…)
                low = getattr(rule, "ge", None) if low is None else low
                high = getattr(rule, "le", None) if high is None else high
            return low, high
    return None, None


def _all_params(dependant, params: str):
    yield from getattr(dependant, params)
    for sub in dependant.dependencies:
        yield from _all_params(sub, params)
