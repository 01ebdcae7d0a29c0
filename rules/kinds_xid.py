"""What an XID counter counted within a window: the events every XID kind (`xid_events`, `xid_recurring`,
`job_xid`) is built on.

XID counts live in the exporter's memory (`vigil.exporters.nvml_collector`): a counter is created by its
first event, and after an exporter restart (a node reboot) it comes back with its next event, counting
from 1 again, which can equal its count before the restart, so neither `increase()` nor `offset` sees
that event. A counter that appeared at some minute of `window` (missing the minute before) counts with
its whole value, but only while its own last event (`vigil_gpu_xid_last_seen_timestamp_seconds`,
published beside each counter) lies within `window`: a counter back after a failed scrape, with no new
event, is not an event, even when another XID of the same GPU has just had one.
"""

from __future__ import annotations

from vigil.common.durations import parse_prometheus_duration

from .promql import format_number

LAST_XID = "vigil_gpu_xid_last_seen_timestamp_seconds"  # per XID series: Unix time of its last event
STEP = "1m"  # how finely a counter's gap (an exporter restart) is looked for


def xid_counted(series: str, window: str) -> str:
    """Per XID series: its increase within `window`, or its whole value when it appeared at some step of
    `window` (present, but missing a step before: new, or back after an exporter restart) and its own
    last event lies within `window`.

    The subquery's steps fall on whole minutes, so a series that appeared since the last one is found by
    the same test at the evaluation's own time: a first XID pages at the next evaluation, not up to a
    minute later. Appearances, not a count of the steps present: a count would be compared with the number of steps
    (`vector(1)`), a series of its own that a subquery over days (`xid_recurring`) evaluates at every
    step, and `vector(1)` alone is then more samples than promtool lets a query load."""
    new = f"{series} unless {series} offset {STEP}"  # now: appeared within the last step, not yet at a step
    appeared = f"count_over_time(({new})[{window}:{STEP}])"  # at a step of the window (steps on whole minutes)
    fresh = f"time() - {LAST_XID} < {format_number(parse_prometheus_duration(window))}"
    return f"((({new}) or ({series} and ({appeared}))) and on (node, gpu, xid) ({fresh})) or increase({series}[{window}])"
