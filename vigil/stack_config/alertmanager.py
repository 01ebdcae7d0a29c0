"""The stack's `alertmanager.yml`, built as data: route by severity to the notifier's webhook."""

from __future__ import annotations

from vigil.common.durations import format_duration
from vigil.common.hostport import http_url

from ..settings import StackSettings
from .layout import RunLayout

RECEIVERS = ("page-critical", "page-warning", "page-info")


def alertmanager_config(settings: StackSettings, layout: RunLayout, inhibit_rules: list[dict]) -> dict:
    """Alertmanager posts every group to the notifier; the bearer token is read from the 0600 token file."""
    webhook = {
        "url": http_url(settings.host, settings.ports.notifier, "/api/v1/alerts/alertmanager"),
        "send_resolved": True,
        "max_alerts": 0,
        "http_config": {"authorization": {"type": "Bearer", "credentials_file": str(layout.token_file)}},
    }
    return {
        "route": {
            "receiver": "page-critical",
            "group_by": ["alertname", "node", "gpu"],
            "group_wait": format_duration(settings.group_wait),
            "group_interval": format_duration(settings.group_interval),
            "repeat_interval": format_duration(settings.repeat_interval),
            "routes": [{"receiver": f"page-{severity}", "matchers": [f'severity="{severity}"']}
                       for severity in ("critical", "warning", "info")],
        },
        "receivers": [{"name": name, "webhook_configs": [dict(webhook)]} for name in RECEIVERS],
        "inhibit_rules": inhibit_rules,
    }
