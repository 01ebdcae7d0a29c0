"""The routing input of the generated Alertmanager configuration: grouping, timings, cross-family
inhibitions and recurring maintenance windows (format: docs/rules.md, "Alertmanager configuration").

`load_routing(path, ruleset)` reads `rules/alertmanager-routing.yaml` (or a user's file) into a frozen
`Routing`; every mistake is collected as `file:line: message` and raised at once as `SpecError`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from vigil.common.yaml_source import plain

from .located import ErrorLog, Located, SpecError, load_located
from .model import SEVERITIES, RuleSet
from .reader import Reader

ROUTING_FILE = Path(__file__).parent / "alertmanager-routing.yaml"
# the keys of one Alertmanager 0.25 time interval (amtool check-config validates their values)
TIME_INTERVAL_KEYS = ("times", "weekdays", "days_of_month", "months", "years", "location")
DEFAULT_TIMINGS = {"group_wait": "30s", "group_interval": "5m", "repeat_interval": "4h"}  # Alertmanager's


@dataclass(frozen=True)
class CrossInhibition:
    """While `source` fires, each of `targets` with equal `equal` labels is muted."""

    source: str
    targets: tuple[str, ...]
    equal: tuple[str, ...]


@dataclass(frozen=True)
class MaintenanceWindow:
    """A recurring window (Alertmanager time intervals) during which the routes of `teams` (None: every
    route but the Watchdog's) for `severities` do not notify."""

    name: str
    time_intervals: tuple[dict, ...]
    teams: tuple[str, ...] | None = None
    severities: tuple[str, ...] = SEVERITIES


@dataclass(frozen=True)
class Routing:
    group_by: tuple[str, ...] = ("alertname", "node", "gpu")
    timings: tuple[tuple[str, str], ...] = tuple(DEFAULT_TIMINGS.items())
    inhibits: tuple[CrossInhibition, ...] = ()
    maintenance: tuple[MaintenanceWindow, ...] = ()


def load_routing(path: Path, ruleset: RuleSet) -> Routing:
    """The routing file `path`, checked against the alerts of `ruleset`; SpecError lists every problem."""
    errors = ErrorLog()
    file = str(path)
    root = load_located(Path(path), errors)
    routing = None
    if root is not None and not root.is_map():
        errors.add(file, root.line, "a routing file must be a mapping (group_by, inhibits, maintenance, ...)")
    elif root is not None:
        routing = _read(Reader(root, file, errors, "routing"), ruleset)
    if errors or routing is None:
        raise SpecError(errors.messages)
    return routing


def _read(top: Reader, ruleset: RuleSet) -> Routing:
    group_by = top.name_list("group_by") or list(Routing.group_by)
    timings = dict(DEFAULT_TIMINGS)
    for key in DEFAULT_TIMINGS:
        timings[key] = top.duration(key) or timings[key]
    names = {alert.name for alert in ruleset.alerts}
    inhibits = [_inhibition(Reader(item, top.file, top.errors, "inhibits"), names)
                for item in _entries(top, "inhibits")]
    teams = {dict(alert.labels).get("team") for alert in ruleset.alerts} - {None}
    windows = [_window(Reader(item, top.file, top.errors, "maintenance"), teams)
               for item in _entries(top, "maintenance")]
    top.unknown_keys()
    seen: set[str] = set()
    for window in (w for w in windows if w is not None):
        if window.name in seen:
            top.error("maintenance", f"maintenance: window name {window.name!r} is used twice")
        seen.add(window.name)
    return Routing(group_by=tuple(group_by), timings=tuple(timings.items()),
                   inhibits=tuple(i for i in inhibits if i is not None),
                   maintenance=tuple(w for w in windows if w is not None))


def _entries(top: Reader, key: str) -> list[Located]:
    """The mappings listed under `key` (errors for anything else)."""
    item = top.raw(key)
    if item is None or item.value is None:
        return []
    if not item.is_list():
        top.error(key, f"routing: {key!r} must be a list of mappings")
        return []
    bad = [entry for entry in item.value if not entry.is_map()]
    for entry in bad:
        top.errors.add(top.file, entry.line, f"routing: each entry of {key!r} must be a mapping")
    return [entry for entry in item.value if entry.is_map()]


def _inhibition(r: Reader, names: set[str]) -> CrossInhibition | None:
    source = r.text("source", required=True)
    targets = r.name_list("targets", required=True, pattern=_ANY_NAME, what="alert name") or []
    equal = r.name_list("equal", required=True)
    r.unknown_keys()
    for key, alert in [("source", source), *(("targets", t) for t in targets)]:
        if alert is not None and alert not in names:
            r.error(key, f"inhibits: unknown alert {alert!r}")
    if source is None or not targets or equal is None:
        return None
    return CrossInhibition(source=source, targets=tuple(targets), equal=tuple(equal))


def _window(r: Reader, teams: set[str]) -> MaintenanceWindow | None:
    name = r.text("name", required=True)
    window_teams = r.name_list("teams", pattern=_ANY_NAME, what="team")
    for team in window_teams or ():
        if team not in teams:
            r.error("teams", f"maintenance: no alert has team {team!r} (teams: {', '.join(sorted(teams))})")
    severities = r.name_list("severities", pattern=_ANY_NAME, what="severity") or list(SEVERITIES)
    for severity in severities:
        if severity not in SEVERITIES:
            r.error("severities", f"maintenance: unknown severity {severity!r} (known: {', '.join(SEVERITIES)})")
    intervals = _time_intervals(r)
    r.unknown_keys()
    if name is None or intervals is None:
        return None
    return MaintenanceWindow(name=name, time_intervals=intervals, severities=tuple(severities),
                             teams=None if window_teams is None else tuple(window_teams))


def _time_intervals(r: Reader) -> tuple[dict, ...] | None:
    item = r.raw("time_intervals", required=True)
    if item is None:
        return None
    if not item.is_list() or not item.value:
        r.error("time_intervals", "maintenance: 'time_intervals' must be a non-empty list of Alertmanager time "
                "intervals (times, weekdays, days_of_month, months, years, location)")
        return None
    result = []
    for entry in item.value:
        if not entry.is_map():
            r.errors.add(r.file, entry.line, "maintenance: a time interval must be a mapping")
            return None
        for key in entry.value:
            if key not in TIME_INTERVAL_KEYS:
                r.errors.add(r.file, entry.key_lines[key], f"maintenance: unknown time interval key {key!r} "
                             f"(known: {', '.join(TIME_INTERVAL_KEYS)})")
        result.append({key: plain(value) for key, value in entry.value.items() if key in TIME_INTERVAL_KEYS})
    return tuple(result)


class _AnyName:
    """A pattern accepting any non-empty name (alert names are checked against the rule set instead)."""

    @staticmethod
    def match(value: str) -> bool:
        return bool(value.strip())


_ANY_NAME = _AnyName()
