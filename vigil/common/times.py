"""RFC 3339 times, one reader and one writer: `parse_time` reads them (from our API, Alertmanager,
Prometheus or a CSV) as Unix seconds; `rfc3339` writes them (UTC, milliseconds, as our API and files do),
and `people_time`/`utc_text` show such a time to people."""

from __future__ import annotations

from datetime import datetime, timezone

#: Alertmanager's zero time: a firing alert's end, i.e. none
ZERO_TIME = "0001-01-01T00:00:00Z"
ZERO_TIME_PREFIX = ZERO_TIME[:10]


def parse_time(value: str | None) -> float | None:
    """RFC 3339 as Unix seconds: `Z` or an offset such as `+01:00` (an Alertmanager on a host that is not
    on UTC writes one), any fraction (our API's milliseconds, Alertmanager's nanoseconds: microseconds
    are kept). A time without an offset is taken as UTC. None for none, an empty string and
    Alertmanager's zero time; ValueError for text that is no such time."""
    if not value or value.startswith(ZERO_TIME_PREFIX):
        return None
    moment = datetime.fromisoformat(value)
    return (moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)).timestamp()


#: the last moment RFC 3339 (a four-digit year) can write; later ones are written as it
LAST = datetime(9999, 12, 31, 23, 59, 59, 999000, tzinfo=timezone.utc)


def rfc3339(seconds: float | None) -> str | None:
    """`seconds` as `2026-11-23T14:00:01.000Z`; a time after the end of year 9999 (a window without end
    in practice, e.g. one the on-call file ends at 9999-12-31T23:00-05:00) as that end."""
    if seconds is None:
        return None
    moment = datetime.fromtimestamp(seconds, tz=timezone.utc) if seconds < LAST.timestamp() else LAST
    # the year always four digits (strftime's %Y writes year 1 as "1", which no reader takes back)
    return f"{moment.year:04d}" + moment.strftime("-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def people_time(rfc3339_time: str | None) -> str:
    """`2026-11-23T14:00:01.000Z` as people read it in a column of UTC times: `2026-11-23 14:00:01` (`-`
    for none)."""
    return rfc3339_time[:19].replace("T", " ") if rfc3339_time else "-"


def utc_text(rfc3339_time: str | None) -> str:
    """`2026-11-23T14:00:01.000Z` as people read it alone: `2026-11-23 14:00:01 UTC` (`-` for none)."""
    return f"{people_time(rfc3339_time)} UTC" if rfc3339_time else "-"
