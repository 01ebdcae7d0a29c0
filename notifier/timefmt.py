"""Deterministic time formatting for the API: RFC 3339, UTC, millisecond precision (read back with
`vigil.common.times.parse_time`)."""

from __future__ import annotations

from datetime import datetime, timezone


#: the last moment RFC 3339 (a four-digit year) can write; later ones are written as it
LAST = datetime(9999, 12, 31, 23, 59, 59, 999000, tzinfo=timezone.utc)


def rfc3339(seconds: float | None) -> str | None:
    """`seconds` as `2026-11-23T14:00:01.000Z`; a time after the end of year 9999 (a window without end
    in practice, e.g. one the on-call file ends at 9999-12-31T23:00-05:00) as that end."""
    if seconds is None:
        return None
    moment = datetime.fromtimestamp(seconds, tz=timezone.utc) if seconds < LAST.timestamp() else LAST
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def people_time(rfc3339_time: str | None) -> str:
    """`2026-11-23T14:00:01.000Z` as people read it in a column of UTC times: `2026-11-23 14:00:01` (`-`
    for none)."""
    return rfc3339_time[:19].replace("T", " ") if rfc3339_time else "-"


def utc_text(rfc3339_time: str | None) -> str:
    """`2026-11-23T14:00:01.000Z` as people read it alone: `2026-11-23 14:00:01 UTC` (`-` for none)."""
    return f"{people_time(rfc3339_time)} UTC" if rfc3339_time else "-"

