"""Incident rules: what a notification does to its group's incident, and whether someone is paged.

One incident per Alertmanager `groupKey` at a time:

- firing, no firing incident for the group → **open** a new incident and page. A group that fires
  again after its incident resolved gets a *new* incident (each incident has one open→resolved span,
  so time-to-resolve stays meaningful);
- firing, incident already firing → **update**; page only when the notification carries a firing the
  incident has not seen (new alert, or an alert that resolved and fired again);
- resolved, incident firing → **resolve** and page "resolved"; with `incidents.resolve_after` the
  resolution first waits that long (`resolving_at`): firing again meanwhile → **steady**, the incident
  stays open and nobody is paged (a flapping alert is one incident and one page); else the engine's
  pass resolves it when the wait is over;
- resolved, the latest incident is already resolved and knows all these alerts → **attach** (an HA
  peer or a late copy: nothing new, no page);
- firing, the latest incident resolved less than `reopen_within_s` ago (the on-call file's
  `incidents.reopen_within`; 0, the default, never) → **reopen** it and page: a flapping group stays
  one incident instead of a new one each time (the engine clears its acknowledgement and restarts its
  escalation at the first tier);
- resolved, otherwise → **record** a new incident, opened and resolved at once, and page "resolved":
  something fired that the on-call was never told about (the notifier was down or the firing
  notification was lost), and they should hear about it.

An alert's firing is its fingerprint and start. Two Prometheus replicas (the HA topology,
docs/scaling.md) evaluate on their own schedules, so each starts the same alert at its own time, and an
Alertmanager peer that restarted may notify with the other replica's start: a firing counts as known
when the incident knows the same fingerprint starting within `REPLICA_START_SKEW_S` of it.

Pure functions only: the store applies the decision inside the transaction that saves the notification.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal

from vigil.notifier.core.models import WebhookPayload

Action = Literal["open", "update", "resolve", "attach", "record", "reopen", "steady"]
# a person's verdict on an incident's page (`engine/actions.mark`); the newest counts, `actionable`
# withdraws an earlier mark, the others count in the rule's noise score (`analytics/health.py`)
MAX_NOTE_CHARS = 10_000  # a note on an incident: the API and the console refuse a longer one, never cut it
VERDICTS = ("noisy", "not_actionable", "actionable")
NOISE_VERDICTS = ("noisy", "not_actionable")
# How far apart two Prometheus replicas may start the same alert: their evaluation offsets (below one
# evaluation interval) plus a scrape that one saw the change in and the other did not.
REPLICA_START_SKEW_S = 120.0


def _parse_key(key: str) -> tuple[str, datetime | None]:
    fingerprint, _, start = key.partition("@")
    try:
        return fingerprint, datetime.fromisoformat(start)
    except ValueError:
        return fingerprint, None


class KnownFirings:
    """The firings an incident knows, asked "is this one known?": the same key, or the same alert
    (fingerprint) started by another replica within `REPLICA_START_SKEW_S`. A known key answers at once;
    the first other question indexes the starts by fingerprint, so a large group costs one pass."""

    def __init__(self, keys: frozenset[str] | set[str]):
        self._keys = keys
        self._starts: dict[str, list[datetime]] | None = None

    def __contains__(self, key: str) -> bool:
        if key in self._keys:
            return True
        fingerprint, start = _parse_key(key)
        if start is None:
            return False
        if self._starts is None:
            self._starts = {}
            for other in self._keys:
                other_fingerprint, other_start = _parse_key(other)
                if other_start is not None:
                    self._starts.setdefault(other_fingerprint, []).append(other_start)
        return any(abs((other - start).total_seconds()) <= REPLICA_START_SKEW_S
                   for other in self._starts.get(fingerprint, ()))


@dataclass(frozen=True)
class IncidentState:
    """The latest incident of a group, as the store knows it."""

    id: int
    status: Literal["firing", "resolved"]
    known_alert_keys: frozenset[str] = field(default_factory=frozenset)
    resolved_at: float | None = None
    resolving: bool = False  # firing, its resolution waiting out `incidents.resolve_after`


@dataclass(frozen=True)
class IncidentDecision:
    action: Action
    page: bool
    page_status: Literal["firing", "resolved"]
    alert_keys: frozenset[str]  # firings of this notification, to remember on the incident

    @property
    def creates_incident(self) -> bool:
        return self.action in ("open", "record")


def decide(payload: WebhookPayload, latest: IncidentState | None, now: float = 0.0,
           reopen_within_s: float = 0.0) -> IncidentDecision:
    """Apply the rules above to `payload`, given the group's latest incident (or None); `now` and
    `reopen_within_s` only matter for the reopen rule."""
    keyed = [(alert.firing_key(), alert.status) for alert in payload.alerts]  # each parsed once
    keys = frozenset(key for key, _ in keyed)
    if payload.status == "firing":
        if latest is not None and latest.status == "firing" and latest.resolving:
            return IncidentDecision("steady", False, "firing", keys)
        if latest is not None and latest.status == "firing":
            seen = KnownFirings(latest.known_alert_keys)
            new_firings = {key for key, status in keyed if status == "firing" and key not in seen}
            return IncidentDecision("update", bool(new_firings), "firing", keys)
        if (latest is not None and reopen_within_s > 0 and latest.resolved_at is not None
                and now - latest.resolved_at <= reopen_within_s):
            return IncidentDecision("reopen", True, "firing", keys)
        return IncidentDecision("open", True, "firing", keys)
    if latest is not None and latest.status == "firing":
        return IncidentDecision("resolve", True, "resolved", keys)
    if latest is not None:
        seen = KnownFirings(latest.known_alert_keys)
        if all(key in seen for key in keys):
            return IncidentDecision("attach", False, "resolved", keys)
    return IncidentDecision("record", True, "resolved", keys)
