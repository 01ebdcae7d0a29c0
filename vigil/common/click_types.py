"""Click parameter types for the shared parsers, so every flag takes the same forms and fails the same way."""

from __future__ import annotations

from urllib.parse import urlsplit

import click

from .durations import EXAMPLES, format_duration, parse_duration
from .hostport import HostPort as Address
from .hostport import parse_host_port


class Duration(click.ParamType):
    """Seconds (float) from `10`, `0.5`, `30s`, `1h30m`, …; `minimum` (seconds) bounds it from below.

    `positive=True` refuses zero as well (an interval or a look-back of nothing makes no sense).
    """

    name = "duration"

    def __init__(self, minimum: float = 0.0, positive: bool = False):
        self.minimum = minimum
        self.positive = positive

    def convert(self, value, param, ctx) -> float:
        try:
            seconds = parse_duration(value)
        except ValueError as exc:
            self.fail(str(exc), param, ctx)
        if self.positive and seconds <= 0:
            self.fail(f"{value!r}: the duration must be above zero ({EXAMPLES})", param, ctx)
        if seconds < self.minimum:
            self.fail(f"{value!r} is shorter than the least allowed, {format_duration(self.minimum)}", param, ctx)
        return seconds

    def get_metavar(self, param, ctx=None) -> str:  # click 8.2 passes the context too
        return "DURATION"


class HostPort(click.ParamType):
    """A `HostPort(host, port)` from HOST:PORT or [IPv6]:PORT; `:PORT` means `default_host` when one is given."""

    name = "host:port"

    def __init__(self, default_host: str | None = None):
        self.default_host = default_host

    def convert(self, value, param, ctx) -> Address:
        if isinstance(value, Address):
            return value
        try:
            return parse_host_port(value, self.default_host)
        except ValueError as exc:
            self.fail(str(exc), param, ctx)

    def get_metavar(self, param, ctx=None) -> str:
        return "HOST:PORT"


def is_http_url(url: str) -> bool:
    parts = urlsplit(url)
    return parts.scheme in ("http", "https") and bool(parts.netloc)


class HttpUrl(click.ParamType):
    """An http(s) URL with a host (`http://prometheus:9090`); anything else is refused before a request is made."""

    name = "url"

    def convert(self, value, param, ctx) -> str:
        if not is_http_url(value):
            self.fail(f"{value!r} is not an http:// or https:// URL with a host (e.g. http://127.0.0.1:9090)", param, ctx)
        return value

    def get_metavar(self, param, ctx=None) -> str:
        return "URL"


#: the largest id SQLite and PostgreSQL (bigint) can hold
MAX_ROW_ID = 2**63 - 1


class RowNumber(click.ParamType):
    """A stored row's number (1 to `MAX_ROW_ID`), named for what it numbers: `RowNumber("incident")` refuses
    `abc` with "'abc' is not an incident number" rather than click's "not a valid integer range"."""

    name = "integer"

    def __init__(self, what: str):
        self.what = what

    def convert(self, value, param, ctx) -> int:
        try:
            number = int(value)
        except (TypeError, ValueError):
            number = 0
        if number < 1:
            article = "an" if self.what[:1] in "aeiou" else "a"
            self.fail(f"{value!r} is not {article} {self.what} number (1 or more)", param, ctx)
        if number > MAX_ROW_ID:
            self.fail(f"{value!r} is too large for {self.what} numbers (at most {MAX_ROW_ID})", param, ctx)
        return number

    def get_metavar(self, param, ctx=None) -> str | None:
        return None if param.param_type_name == "argument" else "ID"  # an argument keeps its own name


def label_pairs(ctx, param, values: tuple[str, ...]) -> dict[str, str]:
    """A click callback: repeated LABEL=VALUE options as a dict (`--match node=node-7 --match gpu=3`)."""
    pairs = {}
    for value in values:
        key, sep, label_value = value.partition("=")
        if not sep or not key:
            raise click.BadParameter(f"{value!r} is not LABEL=VALUE", ctx=ctx, param=param)
        pairs[key] = label_value
    return pairs
