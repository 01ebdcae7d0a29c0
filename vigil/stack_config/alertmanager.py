"""The stack's `alertmanager.yml`: the configuration `vigil rules generate --alertmanager` generates
(`vigil.rules.alertmanager`, one code path), with the stack's notifier as every receiver's webhook, its
bearer token read from the 0600 token file, and the stack settings' group timings."""

from __future__ import annotations

from dataclasses import replace

from vigil.common.durations import format_duration
from vigil.common.hostport import http_url
from vigil.rules import RuleSet
from vigil.rules.alertmanager import WATCHDOG_ALERT, WATCHDOG_RECEIVER, alertmanager_config as generated_config
from vigil.rules.alertmanager import webhook_receiver
from vigil.rules.alertmanager_routing import Routing

from ..settings import StackSettings
from .layout import RunLayout

__all__ = ["WATCHDOG_ALERT", "WATCHDOG_RECEIVER", "alertmanager_config", "notifier_webhook_url"]


def notifier_webhook_url(settings: StackSettings) -> str:
    return http_url(settings.host, settings.ports.notifier, "/api/v1/alerts/alertmanager")


def alertmanager_config(settings: StackSettings, layout: RunLayout, ruleset: RuleSet, routing: Routing) -> dict:
    """Alertmanager posts every group to the notifier, except the Watchdog's (`watchdog`, no integration)."""
    timings = {"group_wait": settings.group_wait, "group_interval": settings.group_interval,
               "repeat_interval": settings.repeat_interval}
    routing = replace(routing, timings=tuple((key, format_duration(value)) for key, value in timings.items()))
    webhook = webhook_receiver(notifier_webhook_url(settings), str(layout.token_file))
    return generated_config(ruleset, routing, webhook)
