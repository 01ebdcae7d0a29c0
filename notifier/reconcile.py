"""Reconcile with Alertmanager at start: open incidents for firing alerts the store never heard of.

Why: if a group's first firing notification never succeeds (the notifier was down) and the group then
resolves, Alertmanager delivers neither message (field notes §2). So on start the notifier reads the
alert groups Alertmanager holds (`GET /api/v2/alerts/groups`, active, not silenced, not inhibited) and
feeds every group none of whose alerts it knows through the normal ingest path, as a firing
notification with the group key `reconciled:<receiver>:<group labels>`. When Alertmanager's own
notification for that group arrives later, it shares the alerts' fingerprints and adopts the incident
(no second page). Restarting twice does not page twice: the synthetic notification is a duplicate.
The Watchdog's group (receiver `watchdog`) is left out: it fires on purpose, and only its absence pages.
"""

from __future__ import annotations

import json
import logging

import requests

from vigil.common.times import ZERO_TIME
from vigil.notifier.core.clock import Clock
from vigil.notifier.ingest.group_commit import IncidentPlanner, ingest_alone
from vigil.notifier.core.incidents import KnownFirings
from vigil.notifier.core.models import WebhookPayload
from vigil.notifier.store.notifications import RECONCILED_PREFIX, Notifications

log = logging.getLogger(__name__)
TIMEOUT_S = 5
# Alertmanager's `watchdog` receiver (`vigil.rules.alertmanager.WATCHDOG_RECEIVER`) carries the always-firing
# Watchdog to the heartbeat route, never to the webhook: its group is never an incident
HEARTBEAT_RECEIVERS = frozenset({"watchdog"})


def reconcile(notifications: Notifications, route: IncidentPlanner, alertmanager_url: str, clock: Clock,
              receiver: str | None = None) -> int:
    """Ingest unknown firing groups from Alertmanager; returns how many alerts were new."""
    response = requests.get(f"{alertmanager_url}/api/v2/alerts/groups", timeout=TIMEOUT_S,
                            params={"active": "true", "silenced": "false", "inhibited": "false"})
    response.raise_for_status()
    known = KnownFirings(notifications.known_alert_keys())
    new_alerts = 0
    for group in response.json():
        name = (group.get("receiver") or {}).get("name", "")
        if (receiver is not None and name != receiver) or name in HEARTBEAT_RECEIVERS:
            continue
        payload = group_as_notification(group, name)
        if payload is None or any(key in known for key in payload.firing_keys()):
            continue  # empty, or the store already has an incident for this group
        result = ingest_alone(notifications, payload, clock(), route)
        if not result.duplicate:
            new_alerts += len(payload.alerts)
            log.warning("reconcile: opened incident %d for %d firing alert(s) of %s that were never "
                        "notified", result.incident_id, len(payload.alerts), payload.groupKey)
    log.info("reconcile with %s: %d new firing alert(s)", alertmanager_url, new_alerts)
    return new_alerts


def group_as_notification(group: dict, receiver: str) -> WebhookPayload | None:
    """An Alertmanager v2 alert group shaped as the webhook notification it would have sent."""
    alerts = [a for a in group.get("alerts", []) if (a.get("status") or {}).get("state") == "active"]
    if not alerts:
        return None
    group_labels = group.get("labels") or {}
    common = dict(alerts[0].get("labels") or {})
    for alert in alerts[1:]:
        common = {k: v for k, v in common.items() if (alert.get("labels") or {}).get(k) == v}
    common_annotations = dict(alerts[0].get("annotations") or {})
    for alert in alerts[1:]:
        common_annotations = {k: v for k, v in common_annotations.items()
                              if (alert.get("annotations") or {}).get(k) == v}
    key = f"{RECONCILED_PREFIX}{receiver}:{json.dumps(group_labels, sort_keys=True)}"
    return WebhookPayload.model_validate({
        "version": "4", "groupKey": key, "status": "firing", "receiver": receiver,
        "groupLabels": group_labels, "commonLabels": common, "commonAnnotations": common_annotations,
        "alerts": [{"status": "firing", "labels": a.get("labels") or {}, "annotations": a.get("annotations") or {},
                    "startsAt": a["startsAt"], "endsAt": ZERO_TIME,
                    "generatorURL": a.get("generatorURL", ""), "fingerprint": a["fingerprint"]}
                   for a in alerts],
    })
