"""Resolve incidents whose alerts Alertmanager has forgotten: the other half of reconcile-at-start.

Why: when the stack stops while an incident is open and its alert resolves meanwhile, nobody tells the
notifier. The Alertmanager started afterwards never held the alert, and Prometheus re-sends a resolved
alert for 15 minutes only, so no resolved notification ever comes and the incident would stay open (its
escalation and SLA clock running) for ever.

So every `check_s` this watcher reads what Alertmanager holds (`GET /api/v2/alerts`: active, silenced
and inhibited alike; a silenced alert is still firing) and, for each firing incident none of whose
alerts (fingerprints) is among them, notes since when it has seen them gone. An incident gone for
`grace_s` is resolved the way a person resolves one (`engine.actions.resolve`: the escalation ends, the
timeline says `resolved` by `alertmanager-reconcile` and for how long the alerts were gone, whoever was
paged gets the resolved page).

Safety: nothing is resolved when Alertmanager cannot be read (the pass is skipped and logged), nor
while Alertmanager has been up for less than `grace_s` (`GET /api/v2/status`, `uptime`: a fresh
Alertmanager has not heard from Prometheus yet), nor when a notification for the incident arrived
since its alerts were seen gone (the gone-since time starts again). The heartbeats' incidents are not
Alertmanager's and are left alone, and so is an incident with no alerts. The gone-since times live in
memory: a notifier that restarts waits a whole `grace_s` again.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Callable

import requests

from vigil.common.durations import format_duration
from vigil.common.times import parse_time
from vigil.notifier.core.clock import Clock
from vigil.notifier.engine import actions
from vigil.notifier.engine.heartbeat import GROUP_PREFIX as HEARTBEAT_GROUPS
from vigil.notifier.loop_thread import LoopThread
from vigil.notifier.reconcile import TIMEOUT_S
from vigil.notifier.store import Store
from vigil.notifier.store.alert_presence import firing_incidents

log = logging.getLogger(__name__)
ACTOR = "alertmanager-reconcile"


@dataclass(frozen=True)
class Pass:
    """What one pass did at `at` (clock seconds): the incidents it resolved, or why it resolved none
    (`skipped`: Alertmanager unreadable, or up for less than the grace period)."""

    at: float
    resolved: tuple[int, ...] = ()
    skipped: str | None = None


class GoneAlertResolver:
    """Resolves firing incidents whose alerts `alertmanager_url` has not held for `grace_s`."""

    def __init__(self, store: Store, alertmanager_url: str, grace_s: float, clock: Clock, check_s: float,
                 on_resolved: Callable[[], None] | None = None):
        self._store, self._url, self._grace_s, self._clock = store, alertmanager_url, grace_s, clock
        self._check_s, self._on_resolved = check_s, on_resolved
        self._gone_since: dict[int, float] = {}
        self._unreadable = False  # logged once per outage, not every pass
        self.last_pass: Pass | None = None  # for tests and debugging: the newest pass
        self._loop_thread = LoopThread("vigil-notifier-reconcile-resolve", self._loop)

    def start(self) -> None:
        self._loop_thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        self._loop_thread.stop(timeout)

    def _loop(self) -> None:
        while not self._loop_thread.stopping:
            try:
                self.run_once()
            except Exception:  # the database may be briefly locked or down: keep watching
                log.exception("resolving incidents gone from Alertmanager failed; retrying")
            self._loop_thread.sleep(self._check_s)

    def run_once(self) -> Pass:
        """One pass at the clock's time."""
        now = self._clock()
        try:
            started, held = self._read_alertmanager()
        except (requests.RequestException, ValueError, KeyError, TypeError) as exc:
            if not self._unreadable:
                log.warning("Alertmanager %s unreadable (%s): resolving no incident until it answers", self._url, exc)
            self._unreadable = True
            return self._done(Pass(now, skipped=f"Alertmanager unreadable: {type(exc).__name__}"))
        if self._unreadable:
            log.info("Alertmanager %s answers again", self._url)
            self._unreadable = False
        due = self._note_gone(now, held)
        if now - started < self._grace_s:
            if due:
                log.info("Alertmanager %s up for %s only, less than %s: not resolving %d incident(s) whose alerts "
                         "it does not hold yet", self._url, format_duration(round(max(0.0, now - started))),
                         format_duration(self._grace_s), len(due))
            return self._done(Pass(now, skipped="Alertmanager up for less than the grace period"))
        return self._done(Pass(now, resolved=tuple(i for i in due if self._resolve(i, now))))

    def _read_alertmanager(self) -> tuple[float, set[str]]:
        """When Alertmanager started (Unix seconds) and the fingerprints of every alert it holds."""
        status = requests.get(f"{self._url}/api/v2/status", timeout=TIMEOUT_S)
        status.raise_for_status()
        started = parse_time(status.json()["uptime"])
        if started is None:  # an empty or zero time: unreadable, like a time that does not parse
            raise ValueError("Alertmanager's status gives no uptime")
        alerts = requests.get(f"{self._url}/api/v2/alerts", timeout=TIMEOUT_S,
                              params={"active": "true", "silenced": "true", "inhibited": "true", "unprocessed": "true"})
        alerts.raise_for_status()
        return started, {alert["fingerprint"] for alert in alerts.json()}

    def _note_gone(self, now: float, held: set[str]) -> list[int]:
        """Update the gone-since times; returns the incidents gone for the grace period."""
        gone = {}
        for incident in firing_incidents(self._store.engine, HEARTBEAT_GROUPS):
            if incident.fingerprints & held:
                continue
            since = self._gone_since.get(incident.id, now)
            # a notification after the alerts were seen gone: Alertmanager held them then, start again
            gone[incident.id] = now if incident.last_notified_at > since else since
        self._gone_since = gone  # held again, resolved, or no longer firing: forgotten
        return [incident_id for incident_id, since in gone.items() if now - since >= self._grace_s]

    def _resolve(self, incident_id: int, now: float) -> bool:
        gone_for = now - self._gone_since[incident_id]
        reason = (f"its alerts were gone from Alertmanager for {format_duration(round(gone_for))} "
                  "(resolved while nobody was told, e.g. during vigil down)")
        try:
            actions.resolve(self._store, incident_id, ACTOR, now, reason=reason)
        except (actions.TransitionRefused, actions.IncidentNotFound):
            return False  # resolved meanwhile (by a person, Alertmanager, or an HA peer)
        del self._gone_since[incident_id]
        log.warning("incident %d resolved: %s", incident_id, reason)
        if self._on_resolved is not None:
            self._on_resolved()
        return True

    def _done(self, result: Pass) -> Pass:
        self.last_pass = result
        return result
