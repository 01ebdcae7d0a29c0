"""The Alertmanager configuration generated from the rule specs and the routing file, built as data.

One generator for `vigil rules generate --alertmanager` and for `vigil up` (vigil/stack/config/):

- route tree: the Watchdog first (receiver `watchdog`, with timings of its own so that it is re-sent
  every `repeat_interval`), then one route per `team` label of the specs with a child per severity to
  the receiver `<team>-<severity>`, then `page-<severity>` for alerts of no known team; the root
  receiver `page-critical` catches the rest;
- every receiver but `watchdog` posts to the notifier's webhook (one fresh dict each: no YAML aliases);
  `watchdog` posts to the notifier's heartbeat (`/api/v1/heartbeat/watchdog`, resolved notifications not
  sent), which pages only when the Watchdog stops arriving, or has no integration when no heartbeat URL
  is given: the Watchdog never pages by itself;
- inhibit rules: the specs' own (`rules.alertmanager_inhibit_rules`) plus the routing file's
  cross-family ones;
- maintenance windows: Alertmanager 0.25 `time_intervals`, named in `mute_time_intervals` of the
  routes they cover.
"""

from __future__ import annotations

from collections.abc import Callable

from .alertmanager_routing import Routing
from .generate import alertmanager_inhibit_rules, inhibit_source_matchers
from .model import SEVERITIES, RuleSet
from .promql import quote

WATCHDOG_ALERT = "Watchdog"
WATCHDOG_RECEIVER = "watchdog"
DEFAULT_RECEIVER = "page-critical"
WEBHOOK_PATH = "/api/v1/alerts/alertmanager"  # the notifier's routes (notifier/api)
HEARTBEAT_PATH = "/api/v1/heartbeat/watchdog"
# The Watchdog's route: a notification soon after start, then one every minute or so (Alertmanager
# re-sends at the first flush, every group_interval, after repeat_interval has passed), well inside
# the notifier's heartbeat timeout (a few minutes)
WATCHDOG_TIMINGS = (("group_wait", "0s"), ("group_interval", "10s"), ("repeat_interval", "1m"))


def webhook_receiver(url: str, credentials_file: str | None = None, send_resolved: bool = True) -> Callable[[], dict]:
    """A factory of the notifier's `webhook_configs` entry (bearer token read from `credentials_file`)."""

    def build() -> dict:
        config: dict = {"url": url, "send_resolved": send_resolved, "max_alerts": 0}
        if credentials_file is not None:
            config["http_config"] = {"authorization": {"type": "Bearer", "credentials_file": credentials_file}}
        return config

    return build


def heartbeat_url_for(webhook_url: str) -> str | None:
    """The notifier's Watchdog heartbeat beside its webhook `webhook_url` (None: not a notifier webhook)."""
    base = webhook_url.rstrip("/")
    return base.removesuffix(WEBHOOK_PATH) + HEARTBEAT_PATH if base.endswith(WEBHOOK_PATH) else None


def teams(ruleset: RuleSet) -> list[str]:
    """The `team` label values of the rule set's alerts, sorted."""
    return sorted({dict(alert.labels)["team"] for alert in ruleset.alerts if "team" in dict(alert.labels)})


def receiver_names(ruleset: RuleSet) -> list[str]:
    """Every receiver of the generated configuration, in the order they are written."""
    return ([f"{team}-{severity}" for team in teams(ruleset) for severity in SEVERITIES]
            + [f"page-{severity}" for severity in SEVERITIES] + [WATCHDOG_RECEIVER])


def _matcher(label: str, value: str) -> str:
    return f"{label}={quote(value)}"


def _muted_by(routing: Routing, team: str | None, severity: str) -> list[str]:
    """The maintenance windows covering the route of `team` (None: no known team) and `severity`."""
    return [window.name for window in routing.maintenance
            if severity in window.severities and (window.teams is None or team in window.teams)]


def _leaf(routing: Routing, team: str | None, severity: str) -> dict:
    route: dict = {"receiver": f"{team or 'page'}-{severity}", "matchers": [_matcher("severity", severity)]}
    muted = _muted_by(routing, team, severity)
    if muted:
        route["mute_time_intervals"] = muted
    return route


def route_tree(ruleset: RuleSet, routing: Routing,
               watchdog_timings: tuple[tuple[str, str], ...] = WATCHDOG_TIMINGS) -> dict:
    """The `route` section: Watchdog first, then team → severity, then severity alone."""
    routes: list[dict] = [{"receiver": WATCHDOG_RECEIVER, "matchers": [_matcher("alertname", WATCHDOG_ALERT)],
                           **dict(watchdog_timings)}]
    for team in teams(ruleset):
        routes.append({"receiver": f"{team}-critical", "matchers": [_matcher("team", team)],
                       "routes": [_leaf(routing, team, severity) for severity in SEVERITIES]})
    routes += [_leaf(routing, None, severity) for severity in SEVERITIES]
    return {"receiver": DEFAULT_RECEIVER, "group_by": list(routing.group_by), **dict(routing.timings),
            "routes": routes}


def inhibit_rules(ruleset: RuleSet, routing: Routing) -> list[dict]:
    """The specs' inhibit rules, then one per cross-family inhibition of the routing file."""
    extra = [{"source_matchers": inhibit_source_matchers(inh.source, inh.equal),
              "target_matchers": [f"alertname=~{quote('|'.join(inh.targets))}"],
              "equal": list(inh.equal)} for inh in routing.inhibits]
    return alertmanager_inhibit_rules(ruleset) + extra


def alertmanager_config(ruleset: RuleSet, routing: Routing, webhook: Callable[[], dict],
                        heartbeat: Callable[[], dict] | None = None,
                        watchdog_timings: tuple[tuple[str, str], ...] = WATCHDOG_TIMINGS) -> dict:
    """The whole `alertmanager.yml` document; `webhook()` builds each receiver's notifier webhook,
    `heartbeat()` the Watchdog's (None: the `watchdog` receiver has no integration)."""
    config: dict = {"route": route_tree(ruleset, routing, watchdog_timings)}
    config["receivers"] = [{"name": name, "webhook_configs": [webhook()]}
                           for name in receiver_names(ruleset) if name != WATCHDOG_RECEIVER]
    watchdog: dict = {"name": WATCHDOG_RECEIVER}
    if heartbeat is not None:
        watchdog["webhook_configs"] = [heartbeat()]
    config["receivers"].append(watchdog)
    config["inhibit_rules"] = inhibit_rules(ruleset, routing)
    if routing.maintenance:
        config["time_intervals"] = [{"name": window.name, "time_intervals": [dict(t) for t in window.time_intervals]}
                                    for window in routing.maintenance]
    return config
