"""The stack's `alertmanager.yml`: the configuration `vigil rules generate --alertmanager` generates
(`vigil.rules.alertmanager`, one code path), with the stack's notifier as every receiver's webhook, its
bearer token read from the 0600 token file, and the stack settings' group timings; the Watchdog goes to
the notifier's heartbeat every `watchdog_repeat_interval` (the notifier pages after `heartbeat_timeout`
without it)."""

from __future__ import annotations

from dataclasses import replace

from vigil.common.durations import format_duration
from vigil.common.hostport import http_url
from vigil.rules import RuleSet
from vigil.rules.alertmanager import HEARTBEAT_PATH, WATCHDOG_ALERT, WATCHDOG_RECEIVER, WEBHOOK_PATH
from vigil.rules.alertmanager import alertmanager_config as generated_config
from vigil.rules.alertmanager import webhook_receiver
from vigil.rules.alertmanager_routing import Routing

from vigil.stack.settings import StackSettings
from vigil.stack.config.layout import RunLayout

__all__ = ["WATCHDOG_ALERT", "WATCHDOG_RECEIVER", "alertmanager_config", "notifier_heartbeat_url",
           "notifier_webhook_url"]


def notifier_webhook_url(settings: StackSettings) -> str:
    return http_url(settings.host, settings.ports.notifier, WEBHOOK_PATH)


def notifier_heartbeat_url(settings: StackSettings) -> str:
    return http_url(settings.host, settings.ports.notifier, HEARTBEAT_PATH)


def alertmanager_config(settings: StackSettings, layout: RunLayout, ruleset: RuleSet, routing: Routing) -> dict:
    """Alertmanager posts every group to the notifier's webhook, and the Watchdog to its heartbeat."""
    timings = {"group_wait": settings.group_wait, "group_interval": settings.group_interval,
               "repeat_interval": settings.repeat_interval}
    routing = replace(routing, timings=_formatted(timings))
    webhook = webhook_receiver(notifier_webhook_url(settings), str(layout.token_file))
    heartbeat = webhook_receiver(notifier_heartbeat_url(settings), str(layout.token_file), send_resolved=False)
    watchdog = _formatted({**timings, "repeat_interval": settings.watchdog_repeat_interval})
    return generated_config(ruleset, routing, webhook, heartbeat, watchdog)


def _formatted(timings: dict[str, float]) -> tuple[tuple[str, str], ...]:
    return tuple((key, format_duration(value)) for key, value in timings.items())
