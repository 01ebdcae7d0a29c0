"""Deterministic time formatting for the API: RFC 3339, UTC, millisecond precision (read back with
`vigil.common.times.parse_time`)."""

from __future__ import annotations

from datetime import datetime, timezone


def rfc3339(seconds: float | None) -> str | None:
    if seconds is None:
        return None
    moment = datetime.fromtimestamp(seconds, tz=timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def people_time(rfc3339_time: str | None) -> str:
    """`2026-11-23T14:00:01.000Z` as people read it in a column of UTC times: `2026-11-23 14:00:01` (`-`
    for none)."""
    return rfc3339_time[:19].replace("T", " ") if rfc3339_time else "-"


def utc_text(rfc3339_time: str | None) -> str:
    """`2026-11-23T14:00:01.000Z` as people read it alone: `2026-11-23 14:00:01 UTC` (`-` for none)."""
    return f"{people_time(rfc3339_time)} UTC" if rfc3339_time else "-"

