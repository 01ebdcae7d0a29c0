"""The heartbeat monitor on a fake clock, on SQLite and PostgreSQL: a heartbeat heard, then silent past its
timeout, opens one incident that the on-call engine pages once, and the next beat resolves it; two
notifiers on one database open one incident between them; the spec's labels route the incident."""

from __future__ import annotations

import threading

import pytest

from sim_clock import SIM_NOW
from vigil.notifier.engine.escalation import EngineIntake
from vigil.notifier.engine.escalation_loop import EscalationEngine
from vigil.notifier.engine.heartbeat import HeartbeatMonitor, UnknownHeartbeat
from vigil.notifier.heartbeat_spec import parse_heartbeat
from vigil.notifier.metrics import NotifierMetrics
from vigil.notifier.store import Store
from vigil.oncall.loader import parse_oncall

ONCALL = """
timezone: UTC
priorities:
  P1: {ack_within: 10m}
people:
  alice: {contacts: {phone: {inbox: true, kind: phone}}}
  bob:   {contacts: {phone: {inbox: true, kind: phone}}}
  olga:  {contacts: {phone: {inbox: true, kind: phone}}}
policies:
  gpu:
    tiers:
      - {name: DRI, notify: [{person: alice}], escalate_after: 5m}
      - {name: senior, notify: [{person: bob}], escalate_after: 10m}
  observability:
    tiers:
      - {name: pipeline owner, notify: [{person: olga}], escalate_after: 5m}
routes:
  - {match: {alertname: HeartbeatMissing, team: platform}, policy: observability}
default_policy: gpu
"""
START = SIM_NOW
TIMEOUT_S = 300.0


class Notifier:
    """One notifier's heartbeat monitor and escalation engine on `db_url`, driven by a shared fake clock."""

    def __init__(self, db_url: str, clock: list[float], *specs: str, on_enqueued=None):
        self.store = Store(db_url)
        self.clock = clock
        oncall = parse_oncall(ONCALL)
        route = EngineIntake(oncall, None, NotifierMetrics())
        self.monitor = HeartbeatMonitor(self.store, tuple(map(parse_heartbeat, specs or ("watchdog=5m",))), route,
                                        lambda: self.clock[0], on_enqueued=on_enqueued)
        self.engine = EscalationEngine(self.store, oncall, lambda: self.clock[0])

    def at(self, offset_s: float) -> list[int]:
        """Move the clock to START + `offset_s` and run a pass of the monitor and the engine."""
        self.clock[0] = START + offset_s
        opened = self.monitor.run_once()
        self.engine.run_once()
        return opened

    def heard(self, offset_s: float, name: str = "watchdog"):
        self.clock[0] = START + offset_s
        return self.monitor.heard(name)

    def incidents(self) -> list[dict]:
        return self.store.notifications.list_incidents(100)

    def paged(self, incident_id: int, status: str = "firing") -> list[tuple]:
        return [(p["person"], p["tier"]) for p in self.store.outbox.pages_of(incident_id) if p["status"] == status]


@pytest.fixture
def notifier(db_url):
    opened = Notifier(db_url, [START])
    yield opened
    opened.store.close()


def test_heard_then_silent_past_the_timeout_pages_once_and_the_next_beat_resolves_it(notifier):
    assert notifier.at(0) == []  # watching from now
    notifier.heard(10)
    assert notifier.at(10 + TIMEOUT_S - 1) == [] and notifier.incidents() == []  # one second to spare
    [incident] = notifier.at(10 + TIMEOUT_S)
    shown = notifier.store.notifications.incident(incident)
    assert (shown["state"], shown["policy"], shown["priority"]) == ("triggered", "gpu", "P1")
    assert shown["labels"] == {"alertname": "HeartbeatMissing", "heartbeat": "watchdog", "severity": "critical"}
    assert shown["title"].startswith("HeartbeatMissing — heartbeat watchdog not heard for 5m")
    assert notifier.paged(incident) == [("alice", 0)]  # the first tier, at once
    for offset in (TIMEOUT_S + 60, TIMEOUT_S + 200):  # later passes open nothing more and page nobody again
        assert notifier.at(10 + offset) == []
    assert len(notifier.incidents()) == 1 and notifier.paged(incident) == [("alice", 0)]
    notifier.at(10 + TIMEOUT_S + 300)  # the policy escalates it like any incident
    assert notifier.paged(incident) == [("alice", 0), ("bob", 1)]

    beat = notifier.heard(10 + TIMEOUT_S + 400)
    assert beat.resolved_incident == incident
    assert notifier.store.notifications.incident(incident)["state"] == "resolved"
    assert sorted(notifier.paged(incident, "resolved")) == [("alice", 0), ("bob", 1)]
    assert notifier.store.escalations.pending_count() == 0
    [row] = notifier.monitor.rows().values()
    assert (row.beats, row.missing_since, row.last_seen_at) == (2, None, START + 10 + TIMEOUT_S + 400)
    assert notifier.heard(10 + TIMEOUT_S + 460).resolved_incident is None  # an ordinary beat


def test_silent_again_later_opens_a_new_incident(notifier):
    notifier.at(0)
    [first] = notifier.at(TIMEOUT_S)
    notifier.heard(TIMEOUT_S + 30)
    [second] = notifier.at(2 * TIMEOUT_S + 30)
    assert second != first and [i["state"] for i in notifier.incidents()] == ["resolved", "triggered"]


def test_a_heartbeat_never_heard_pages_a_timeout_after_the_notifier_started_watching(notifier):
    notifier.at(0)
    assert notifier.at(TIMEOUT_S - 0.5) == []
    [incident] = notifier.at(TIMEOUT_S)
    assert notifier.paged(incident) == [("alice", 0)]


def test_an_incident_resolved_by_hand_is_not_reopened_while_the_heartbeat_stays_silent(notifier):
    from vigil.notifier.engine import actions

    notifier.at(0)
    [incident] = notifier.at(TIMEOUT_S)
    actions.resolve(notifier.store, incident, "alice", START + TIMEOUT_S + 10)
    assert notifier.at(TIMEOUT_S * 3) == [] and len(notifier.incidents()) == 1
    assert notifier.heard(TIMEOUT_S * 3 + 1).resolved_incident == incident  # nothing more to page
    assert notifier.paged(incident, "resolved") == [("alice", 0)]  # the hand resolution's page only


def test_the_specs_labels_route_the_incident_and_set_its_priority(db_url):
    notifier = Notifier(db_url, [START], "watchdog=5m,team=platform,priority=P2", "cron-backup=1h,severity=warning")
    try:
        notifier.at(0)
        [watchdog] = notifier.at(TIMEOUT_S)
        shown = notifier.store.notifications.incident(watchdog)
        assert (shown["policy"], shown["priority"], shown["labels"]["team"]) == ("observability", "P2", "platform")
        assert notifier.paged(watchdog) == [("olga", 0)]
        [backup] = notifier.at(3600)  # the other heartbeat has its own timeout and its own incident
        assert notifier.store.notifications.incident(backup)["priority"] == "P3"  # severity warning
        with pytest.raises(UnknownHeartbeat):
            notifier.heard(3601, "nobody")
    finally:
        notifier.store.close()


def test_two_notifiers_on_one_database_open_one_incident_and_page_once(db_url):
    clock = [START]
    peers = [Notifier(db_url, clock), Notifier(db_url, clock)]
    try:
        for peer in peers:
            peer.at(0)
        peers[0].heard(5)
        clock[0] = START + 5 + TIMEOUT_S
        barrier, opened = threading.Barrier(2), []

        def run(peer: Notifier) -> None:
            barrier.wait()
            opened.extend(peer.monitor.run_once())

        threads = [threading.Thread(target=run, args=(peer,)) for peer in peers]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
        assert len(opened) == 1
        for peer in peers:
            assert peer.at(5 + TIMEOUT_S + 1) == []
        [incident] = peers[1].incidents()
        assert peers[1].paged(incident["id"]) == [("alice", 0)]
        assert peers[1].heard(5 + TIMEOUT_S + 30).resolved_incident == incident["id"]
        assert peers[0].heard(5 + TIMEOUT_S + 31).resolved_incident is None  # the peer sees it resolved
        assert peers[0].paged(incident["id"], "resolved") == [("alice", 0)]
    finally:
        for peer in peers:
            peer.store.close()


@pytest.mark.parametrize("text, message", [
    ("watchdog", "is not NAME=TIMEOUT"), ("watchdog=soon", "is not a duration"),
    ("watchdog=0", "more than 0"), ("watchdog=366d", "at most 1y"), ("watchdog=99999999999999d", "at most"),
    ("watchdog=5m,team", "is not LABEL=VALUE"),
    ("watchdog=5m,heartbeat=x", "set by the notifier"), ("bad name=5m", "name"),
])
def test_malformed_heartbeat_specs_say_what_is_wrong(text, message):
    with pytest.raises(ValueError, match=message):
        parse_heartbeat(text)


def test_notifiers_starting_after_the_deadline_passed_unwatched_give_the_sender_a_whole_timeout(db_url):
    clock = [START]
    before = Notifier(db_url, clock)
    before.at(0)
    before.heard(10)
    before.store.close()  # every notifier stops; the sender's beats go nowhere
    after = Notifier(db_url, clock)  # back an hour later: the silence was the notifier's own
    try:
        assert after.at(3600) == [] and after.incidents() == []
        assert after.at(3600 + TIMEOUT_S - 1) == []
        [incident] = after.at(3600 + TIMEOUT_S)  # still silent a whole timeout after the restart: page
        assert after.paged(incident) == [("alice", 0)]
    finally:
        after.store.close()


def test_a_notifier_joining_a_running_peer_keeps_the_deadline(db_url):
    clock = [START]
    running, joining = Notifier(db_url, clock), Notifier(db_url, clock)
    try:
        running.at(0)
        running.heard(10)
        assert joining.at(10 + TIMEOUT_S - 30) == []  # starts watching late: the deadline stays the beat's
        [incident] = joining.at(10 + TIMEOUT_S)
        assert running.at(10 + TIMEOUT_S + 1) == [] and running.paged(incident) == [("alice", 0)]
    finally:
        running.store.close()
        joining.store.close()


def test_only_an_opened_or_resolved_incident_wakes_the_delivery_worker_and_the_engine(db_url):
    """A beat is on the hot path: an ordinary one changes no page or escalation, so it wakes nobody."""
    woken = []
    notifier = Notifier(db_url, [START], on_enqueued=lambda: woken.append("worker"))
    notifier.store.escalations.on_change(lambda: woken.append("engine"))
    try:
        notifier.at(0)
        notifier.heard(10)
        notifier.heard(20)
        assert notifier.at(20 + TIMEOUT_S - 1) == [] and woken == []
        notifier.at(20 + TIMEOUT_S)
        assert woken == ["worker", "engine"]
        notifier.heard(20 + TIMEOUT_S + 5)  # resolves it: its resolved pages are due
        assert woken == ["worker", "engine"] * 2
    finally:
        notifier.store.close()
