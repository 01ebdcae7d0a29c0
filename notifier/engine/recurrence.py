"""A GPU's history on its page: the same fault on the same GPU within a week escalates the repair action
to a hardware inspection, as gpud does for a second XID 79.

The history is the notifier's own: incidents opened in the `WINDOW_S` before this one about the same alert (and
XID, where the alert has one) on the same GPU (its UUID, else node and GPU index). It counts when the
catalogue says the action is not enough the second time: an XID marked `recurs_to_hardware`, or, for an
alert without an XID, a GPU reset or node reboot.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import sqlalchemy as sa

from vigil.common.durations import format_duration
from vigil.notifier.core.models import WebhookPayload
from vigil.notifier.schema import incidents
from vigil.notifier.store.notifications import labels_hold
from vigil.rules.xid_catalog import INSPECT_HARDWARE, REBOOT_NODE, RESET_GPU, XID_CATALOG

WINDOW_S = 7 * 86400.0
_ESCALATING = frozenset({RESET_GPU, REBOOT_NODE})


@dataclass(frozen=True)
class Recurrence:
    incident_id: int
    ago_s: float

    def text(self) -> str:
        """`the same fault on this GPU 2d ago (incident #12)`."""
        return f"the same fault on this GPU {format_duration(float(int(self.ago_s)))} ago (incident #{self.incident_id})"


def _escalates(labels: dict) -> bool:
    action = labels.get("action")
    if labels.get("xid"):
        entry = XID_CATALOG.get(int(labels["xid"])) if str(labels["xid"]).isdigit() else None
        return entry is not None and entry.recurs_to_hardware and action != INSPECT_HARDWARE
    return action in _ESCALATING


def _same_gpu(mine: dict, theirs: dict) -> bool:
    if mine.get("uuid") and theirs.get("uuid"):
        return mine["uuid"] == theirs["uuid"]
    return bool(mine.get("node")) and (mine.get("node"), mine.get("gpu")) == (theirs.get("node"), theirs.get("gpu"))


def recurrence(conn: sa.Connection, incident_id: int, payload: WebhookPayload | None, began: float) -> Recurrence | None:
    """The newest incident of the same escalating fault on the same GPU opened within the week before
    `began` (the incident's opening: its alert's start), or None."""
    firing = [alert for alert in payload.alerts if alert.status == "firing"] if payload is not None else []
    if not firing or not firing[0].labels.get("gpu") or not _escalates(firing[0].labels):
        return None
    mine = firing[0].labels
    rows = conn.execute(
        sa.select(incidents.c.id, incidents.c.opened_at, incidents.c.labels)
        .where(incidents.c.id != incident_id, incidents.c.opened_at >= began - WINDOW_S,
               incidents.c.opened_at < began, labels_hold("alertname", mine.get("alertname", "")))
        .order_by(incidents.c.id.desc()).limit(100)).all()
    for row in rows:
        theirs = json.loads(row.labels)
        if (theirs.get("alertname") == mine.get("alertname") and theirs.get("xid") == mine.get("xid")
                and _same_gpu(mine, theirs)):
            return Recurrence(row.id, began - row.opened_at)
    return None
