"""Mute stage: a page that must not go out now ends `muted`, without a send attempt.

- A firing page whose incident has resolved while it waited (throttled, between retries, or until its
  escalation step was due): paging "FIRING" now would be stale; the resolved page tells the story.
- A firing page whose incident has been acknowledged: someone is on it (a re-page after
  `repage_acknowledged_after` is a new page, enqueued once the acknowledgement has expired).
- A resolved page to a contact whose firing pages of the incident were never sent (the SMS a minute
  after the call, muted by the acknowledgement; a phone that failed and fell back to SMS): nobody
  heard of the firing there, so nobody hears of its end there. While such a firing page still waits,
  the resolved one is postponed (re-checked every few seconds) until the firing one's fate is known.
  A resolved page for an incident that paged nobody while it fired (Alertmanager's firing
  notification never arrived) still goes out: the on-call learns that something happened.
- Any page of an incident whose labels match an active maintenance window (made through the API/CLI,
  or written in the on-call file; `window_holding`): recorded on the incident's timeline as
  `page_held`, not sent. Its resolved page is held too, unless the person had been sent the firing one
  before the window began. The escalation engine asks the same question before it moves a policy on:
  while a window holds the incident, its escalation pauses (`vigil.notifier.engine.pause`).

Resolved pages are otherwise never muted. A storm-control digest stands for pages of several incidents
and is never muted here (its pages were checked before they were folded).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping

import sqlalchemy as sa

from vigil.notifier.deliveries import Delivery
from vigil.notifier.delivery.stage import Outcome, Page
from vigil.notifier.store.maintenance import Maintenance
from vigil.common.times import rfc3339
from vigil.oncall.model import OncallConfig
from vigil.oncall.plan import config_maintenance
from vigil.oncall.schedule_model import zone_named
from vigil.oncall.schedules import to_unix

# incident id -> {"state": triggered|acknowledged|resolved, "labels": {...}} (None: no such incident)
IncidentOf = Callable[[int], Mapping | None]
# (labels, now) -> the `page_held` detail of the window holding them, or None
WindowFor = Callable[[dict, float], dict | None]
# delivery -> what became of the incident's firing pages to the same person and contact (Outbox.firing_page_fate)
FiringFate = Callable[[Delivery], tuple[str, float | None]]
RECHECK_S = 2.0  # a resolved page waiting on a firing one looks again at least this often


class MuteStage:
    name = "mute"

    def __init__(self, incident_of: IncidentOf, window_for: WindowFor, firing_fate: FiringFate):
        self._incident_of = incident_of
        self._window_for = window_for
        self._firing_fate = firing_fate

    def __call__(self, page: Page) -> Page:
        delivery = page.delivery
        if page.outcome is not None or delivery.is_digest:
            return page
        incident = self._incident_of(delivery.incident_id)
        if incident is None:
            return page
        firing = delivery.page_status == "firing"
        if firing and incident["state"] in ("resolved", "acknowledged"):
            return page.decided(Outcome("muted", page.now))
        fate = None if firing else self._firing_fate(delivery)
        if fate is not None and fate[0] == "pending":
            wait = min(max(fate[1] - page.now, 0.5), RECHECK_S)
            return page.decided(Outcome("postponed", page.now, due_at=page.now + wait))
        if fate is not None and fate[0] == "unsent":
            return page.decided(Outcome("muted", page.now))
        held = self._window_for(incident["labels"], page.now)
        if held is not None and (firing or fate[0] != "sent"):
            return page.decided(Outcome("muted", page.now, held=held))
        return page


@dataclass(frozen=True)
class Held:
    """A maintenance window holding an incident's pages: `detail` (the `page_held` event's: reason,
    window id or "on-call file", why, by, until) and when the window ends (`until`, Unix seconds)."""

    detail: dict
    until: float


def window_holding(maintenance: Maintenance, oncall: OncallConfig, labels: dict, now: float,
                   conn: sa.Connection | None = None) -> Held | None:
    """The maintenance window holding pages of `labels` at `now`, or None: the windows made through the
    API/CLI first (read on `conn` if given), then those of the on-call file."""
    window = maintenance.active_for(labels, now, conn)
    if window is not None:
        return Held(dict(reason="maintenance", window=window.id, why=window.reason, by=window.created_by,
                         until=rfc3339(window.end)), window.end)
    configured = config_maintenance(oncall, labels, now)
    if configured is None:
        return None
    end = to_unix(configured.end, zone_named(oncall.timezone))
    return Held(dict(reason="maintenance", window="on-call file", why=configured.reason, until=rfc3339(end)), end)
