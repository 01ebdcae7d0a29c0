"""Why a statistically strong inhibition candidate must still not be proposed.

A candidate "S inhibits T" that meets support and confidence is left out when:

- `always_firing_source`: S fires (almost) all the time — the Watchdog by name, or any alert with one
  series firing for at least `ALWAYS_FIRING_SHARE` of the history span. It "covers" every target by
  construction, so its confidence says nothing, and as a source it would mute the target for ever;
- `info_source`: S has severity `info` (information only: it never mutes a page);
- `lower_severity_source`: S is less severe than T (a warning never mutes a critical);
- `parent_target`: T is at a higher topology level than S (a GPU-level alert never mutes the
  node-level alert above it, nor a cluster-wide one without topology labels);
- `no_equal_labels`: S and T share no topology label, so the rule would have no `equal` and would mute
  T everywhere whenever S fires anywhere;
- `opposite_direction`: both directions of a pair are safe and qualify; the other one was chosen.
"""

from __future__ import annotations

from vigil.aiops.correlate.alerts import Firing
from vigil.rules.alertmanager import WATCHDOG_ALERT
from vigil.rules.model import SEVERITIES

# an alert with a series firing for at least this share of the history span is always-firing
ALWAYS_FIRING_SHARE = 0.9
# always firing by design, however short the history
KNOWN_ALWAYS_FIRING = frozenset({WATCHDOG_ALERT})
# critical 3, warning 2, info 1; other severities are not compared
SEVERITY_RANK = {name: len(SEVERITIES) - index for index, name in enumerate(SEVERITIES)}

REASONS = {
    "always_firing_source": "the source fires (almost) all the time, like the Watchdog",
    "info_source": "the source has severity info",
    "lower_severity_source": "the source is less severe than the target",
    "parent_target": "the target is at a higher topology level (a GPU alert never mutes its node's or a cluster-wide one)",
    "no_equal_labels": "no topology label shared for `equal`: the rule would mute the target everywhere",
    "opposite_direction": "the opposite rule of the pair was chosen",
}


def history_span(firings: list[Firing]) -> tuple[float, float] | None:
    """First start to last time seen (a start or an end); None without firings."""
    if not firings:
        return None
    return min(f.start for f in firings), max(max(f.start, f.end or f.start) for f in firings)


def always_firing(by_name: dict[str, list[Firing]], span: tuple[float, float] | None) -> set[str]:
    """Alertnames that fire (almost) all the time over `span` (still-firing firings run to its end)."""
    found = {name for name in by_name if name in KNOWN_ALWAYS_FIRING}
    if span is None or span[1] <= span[0]:
        return found
    begin, end = span
    for name, firings in by_name.items():
        series: dict[tuple, list[tuple[float, float]]] = {}
        for f in firings:
            low, high = max(f.start, begin), min(end if f.end is None else f.end, end)
            if high > low:
                series.setdefault(f.labels, []).append((low, high))
        if any(_union(intervals) >= ALWAYS_FIRING_SHARE * (end - begin) for intervals in series.values()):
            found.add(name)
    return found


def _union(intervals: list[tuple[float, float]]) -> float:
    total, reach = 0.0, float("-inf")
    for low, high in sorted(intervals):
        low = max(low, reach)
        if high > low:
            total += high - low
            reach = high
    return total


def severity(firings: list[Firing], lowest: bool) -> int | None:
    """The lowest (or highest) known severity rank of an alert's firings; None when none is known."""
    ranks = [SEVERITY_RANK[f.label("severity")] for f in firings if f.label("severity") in SEVERITY_RANK]
    if not ranks:
        return None
    return min(ranks) if lowest else max(ranks)


def unsafe_reason(source: list[Firing], target: list[Firing], always: set[str], parent_target: bool,
                  equal: tuple[str, ...]) -> str | None:
    """The first reason (a `REASONS` key) that "source inhibits target" must not be proposed, or None."""
    if source[0].alertname in always:
        return "always_firing_source"
    source_rank, target_rank = severity(source, lowest=True), severity(target, lowest=False)
    if source_rank == SEVERITY_RANK["info"]:
        return "info_source"
    if source_rank is not None and target_rank is not None and source_rank < target_rank:
        return "lower_severity_source"
    if parent_target:
        return "parent_target"
    if not equal:
        return "no_equal_labels"
    return None
