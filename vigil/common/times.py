"""Reading RFC 3339 times (from our API, Alertmanager, Prometheus or a CSV) as Unix seconds."""

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
