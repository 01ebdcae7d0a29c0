"""Each delivery stage on its own, on a real SQLite store, with a clock the test moves by hand."""

from __future__ import annotations

import pytest
from prometheus_client import generate_latest

from sim_clock import SIM_NOW, FakeClock
from vigil.notifier.ingest.group_commit import ingest_alone
from vigil.notifier.core.deliveries import Delivery, NewDelivery
from vigil.notifier.delivery.channels import Channels, LocalInboxSender, AppriseSender
from vigil.notifier.delivery.stages import (
    CHANNEL_GONE, DedupStage, MuteStage, Outcome, Page, RecordStage, RetryStage, run_stages, SendStage,
    ThrottleStage,
)
from vigil.notifier.delivery.pipeline import delivery_stages
from vigil.notifier.engine.escalation import EngineIntake
from vigil.notifier.delivery.worker import DeliveryWorker
from vigil.notifier.metrics import NotifierMetrics
from vigil.notifier.core.models import WebhookPayload
from vigil.notifier.store import Store, incident_state
from vigil.oncall.loader import parse_oncall
from test_notifier_support import INBOX_ONLY, RecordingEndpoint, alert, make_settings, payload

T0 = SIM_NOW
TWO_CHANNELS = """
targets:
  sre:
    channels:
      - type: inbox
      - type: apprise
        url: "json://127.0.0.1:9/phone"
        severities: [critical]
default: sre
"""


@pytest.fixture
def store(tmp_path):
    opened = Store(f"sqlite:///{tmp_path / 'notifier.db'}")
    yield opened
    opened.close()


def ingest(store, body, now=T0, oncall=INBOX_ONLY, route=None):
    route = route or EngineIntake(parse_oncall(oncall))
    return ingest_alone(store.notifications, WebhookPayload.model_validate(body), now, route)


def claimed(store, now=T0) -> list[Page]:
    return [Page(delivery, now) for delivery in store.outbox.claim_due(now, 20, lease_s=30)]


# --- route -----------------------------------------------------------------------------------------
def test_route_enqueues_one_page_per_channel_that_wants_the_severity(store):
    ingest(store, payload(alert("c"), group_key="critical"), oncall=TWO_CHANNELS)
    ingest(store, payload(alert("w", severity="warning"), group_key="warning"), oncall=TWO_CHANNELS)
    pages = [(p.delivery.incident_id, p.delivery.channel_type) for p in claimed(store)]
    assert pages == [(1, "inbox"), (1, "apprise"), (2, "inbox")]  # the phone takes critical only


def test_route_writes_the_page_text_from_the_notification(store):
    ingest(store, payload(alert("a")))
    [page] = claimed(store)
    assert page.delivery.title == "[FIRING:1] GpuLost node=node-1 gpu=0 — GPU fell off the bus"
    assert page.delivery.body.startswith("incident #1 · P1\n- firing GpuLost node=node-1 gpu=0: GPU fell off the bus")


def test_a_page_routed_with_a_wait_stays_in_the_outbox_until_it_is_due(store):
    incident_id = ingest(store, payload(alert("a")), route=PagesNobody()).incident_id
    with store.engine.begin() as conn:  # what an escalation step enqueues
        store.outbox.enqueue(conn, None, incident_id, "firing", [NewDelivery("manager", 0, "inbox", "t", "b", delay_s=300)], T0)
    assert claimed(store, T0 + 299) == []
    [page] = claimed(store, T0 + 300)
    assert page.delivery.target == "manager"


# --- mute ------------------------------------------------------------------------------------------
def never_held(labels, now):
    return None


def test_mute_stops_a_waiting_firing_page_whose_incident_has_resolved(store):
    ingest(store, payload(alert("a")))
    mute = MuteStage(store.notifications.incident, never_held, store.outbox.firing_page_fate)
    [firing] = claimed(store)
    assert mute(firing).outcome is None  # the incident still fires: go on
    ingest(store, payload(alert("a", status="resolved")), now=T0 + 5)
    [resolved] = claimed(store, T0 + 5)  # the firing page is leased; it comes back below
    # the firing page may still go out (its sender may be running): the resolved one waits to know
    assert mute(resolved).outcome == Outcome("postponed", T0 + 5, due_at=T0 + 7)
    [waiting] = claimed(store, T0 + 30)  # its lease is over, and it is still pending
    assert waiting.delivery.id == firing.delivery.id
    assert mute(waiting).outcome == Outcome("muted", T0 + 30)
    RecordStage(store.outbox, NotifierMetrics())(mute(waiting))
    # nobody heard of the firing on this contact: nobody hears of its end (as Alertmanager does)
    assert mute(resolved).outcome == Outcome("muted", T0 + 5)


def test_a_resolved_page_follows_a_firing_page_that_was_sent(store):
    ingest(store, payload(alert("a")))
    mute = MuteStage(store.notifications.incident, never_held, store.outbox.firing_page_fate)
    [firing] = claimed(store)
    RecordStage(store.outbox, NotifierMetrics())(firing.decided(Outcome("sent", T0)))
    ingest(store, payload(alert("a", status="resolved")), now=T0 + 5)
    [resolved] = claimed(store, T0 + 5)
    assert mute(resolved).outcome is None  # the resolved page tells the story


def test_a_resolved_page_of_an_incident_that_paged_nobody_still_goes_out(store):
    """Alertmanager's firing notification never arrived: the on-call learns that something happened."""
    ingest(store, payload(alert("a", status="resolved")))
    [resolved] = claimed(store)
    assert resolved.delivery.page_status == "resolved"
    assert MuteStage(store.notifications.incident, never_held, store.outbox.firing_page_fate)(resolved).outcome is None


def test_mute_stops_the_firing_pages_of_an_acknowledged_incident(store):
    ingest(store, payload(alert("a")))
    with store.engine.begin() as conn:
        incident_state.acknowledge(conn, 1, "alice", T0 + 1)
    [firing] = claimed(store, T0 + 2)
    assert MuteStage(store.notifications.incident, never_held, store.outbox.firing_page_fate)(firing).outcome == \
        Outcome("muted", T0 + 2)


def test_mute_holds_pages_in_a_maintenance_window_and_says_so(store):
    ingest(store, payload(alert("a")))
    held = {"reason": "maintenance", "window": 7}
    mute = MuteStage(store.notifications.incident, lambda labels, now: held if labels["node"] == "node-1" else None,
                     store.outbox.firing_page_fate)
    [firing] = claimed(store)
    assert mute(firing).outcome == Outcome("muted", T0, held=held)
    RecordStage(store.outbox, NotifierMetrics())(mute(firing))
    ingest(store, payload(alert("a", status="resolved")), now=T0 + 5)
    [resolved] = claimed(store, T0 + 5)
    assert mute(resolved).outcome.result == "muted"  # nobody heard of the firing: nobody hears of its end
    [event] = [e for e in store.timeline.of(1) if e["kind"] == "page_held"]
    assert event["detail"] == {"delivery": firing.delivery.id, "person": "demo-dri", "contact": "channel-0",
                               "kind": "inbox", "reason": "maintenance", "window": 7}
    assert store.outbox.states() == {"muted": 1, "pending": 1}


# --- dedup -----------------------------------------------------------------------------------------
def test_dedup_sends_only_the_newest_of_the_firing_pages_waiting_for_one_channel(store):
    ingest(store, payload(alert("a"), group_key="g1"))
    ingest(store, payload(alert("a"), alert("b", node="node-2"), group_key="g1"), now=T0 + 1)  # b joins
    ingest(store, payload(alert("x"), group_key="g2"), now=T0 + 2)  # another incident
    dedup = DedupStage(store.outbox.newer_page_waiting)
    older, newer, other = (dedup(page) for page in claimed(store, T0 + 2))
    assert older.outcome == Outcome("superseded", T0 + 2)
    assert "node=node-2" not in older.delivery.body and "node=node-2" in newer.delivery.body
    assert newer.outcome is None and other.outcome is None


# --- throttle --------------------------------------------------------------------------------------
def test_throttle_holds_pages_over_the_limit_until_the_minute_window_lets_them_out(store):
    for group in ("g1", "g2", "g3"):
        ingest(store, payload(alert(group), group_key=group))
    throttle = ThrottleStage(lambda delivery: 2)
    pages = [throttle(page) for page in claimed(store)]
    assert [p.outcome for p in pages] == [None, None, Outcome("postponed", T0, due_at=T0 + 60)]
    assert throttle(Page(pages[2].delivery, T0 + 59.9)).outcome.result == "postponed"
    assert throttle(Page(pages[2].delivery, T0 + 60)).outcome is None
    unlimited = ThrottleStage(lambda delivery: None)  # the local inbox
    assert all(unlimited(Page(pages[0].delivery, T0)).outcome is None for _ in range(100))


# --- send ------------------------------------------------------------------------------------------
def test_send_hands_the_page_to_its_channel_and_times_it_with_the_clock(store):
    ingest(store, payload(alert("a")))
    [page] = claimed(store)
    with RecordingEndpoint(failures=1) as endpoint:
        send = SendStage(lambda d: AppriseSender(f"json://127.0.0.1:{endpoint.port}/hook"), FakeClock(step=0.5))
        failed = send(page)
        sent = send(page)
    assert failed.outcome.result == "failed" and "500" in failed.outcome.error
    assert sent.outcome == Outcome("sent", T0 + 2.0, duration_s=0.5)
    assert [r["title"] for r in endpoint.received] == [page.delivery.title]


def test_send_fails_for_good_when_the_channel_left_the_config_or_the_plugin_breaks(store):
    ingest(store, payload(alert("a")))
    [page] = claimed(store)
    gone = SendStage(lambda d: None, FakeClock())(page)
    assert gone.outcome == Outcome("failed", T0, error=CHANNEL_GONE, retryable=False)

    class BrokenPlugin:
        def send(self, delivery):
            raise RuntimeError("plugin bug")
    broken = SendStage(lambda d: BrokenPlugin(), FakeClock())(page)
    assert broken.outcome.error == "RuntimeError: plugin bug" and broken.outcome.retryable


# --- retry -----------------------------------------------------------------------------------------
def test_retry_backs_off_exponentially_and_gives_up_after_the_last_attempt(store):
    ingest(store, payload(alert("a")))
    [page] = claimed(store)
    retry = RetryStage(base_s=2, max_s=5, max_attempts=4)
    due = []
    for attempts in range(4):
        delivery = page.delivery.__class__(**{**page.delivery.__dict__, "attempts": attempts})
        failed = Page(delivery, T0, Outcome("failed", T0 + 1, error="HTTP 500"))
        due.append(retry(failed).outcome.due_at)
    assert due == [T0 + 3, T0 + 5, T0 + 6, None]  # 2 s, 4 s, capped at 5 s; the 4th failure is final
    permanent = Page(page.delivery, T0, Outcome("failed", T0, error=CHANNEL_GONE, retryable=False))
    assert retry(permanent) == permanent
    assert retry(page) == page  # nothing failed


# --- record ----------------------------------------------------------------------------------------
def test_record_writes_every_outcome_to_the_outbox_and_counts_it(store):
    for group in ("g1", "g2", "g3", "g4"):
        ingest(store, payload(alert(group), group_key=group))
    metrics = NotifierMetrics()
    record = RecordStage(store.outbox, metrics)
    sent, retry, muted, postponed = claimed(store)
    record(sent.decided(Outcome("sent", T0 + 1, duration_s=0.2)))
    record(retry.decided(Outcome("retry", T0 + 1, error="HTTP 500", due_at=T0 + 3)))
    record(muted.decided(Outcome("muted", T0 + 1)))
    record(postponed.decided(Outcome("postponed", T0, due_at=T0 + 40)))
    assert store.outbox.states() == {"sent": 1, "pending": 2, "muted": 1}
    assert [a["ok"] for a in store.outbox.attempts_of(sent.delivery.id)] == [True]
    assert store.outbox.attempts_of(muted.delivery.id) == []  # not an attempt
    due = [p.delivery.id for p in claimed(store, T0 + 3)]
    assert due == [retry.delivery.id]  # the postponed one waits until T0 + 40
    text = generate_latest(metrics.registry).decode()
    for result in ("sent", "retry", "muted"):
        assert f'vigil_notifier_deliveries_total{{channel="inbox",result="{result}"}} 1.0' in text
    with pytest.raises(ValueError, match="undecided"):
        record(sent)


def test_the_stages_run_in_order_and_a_decided_page_passes_the_rest_untouched(store):
    ingest(store, payload(alert("a")))
    ingest(store, payload(alert("a", status="resolved")), now=T0 + 1)
    [firing, resolved] = claimed(store, T0 + 1)
    with RecordingEndpoint() as endpoint:
        stages = [MuteStage(store.notifications.incident, never_held, store.outbox.firing_page_fate), DedupStage(store.outbox.newer_page_waiting),
                  ThrottleStage(lambda d: 10),
                  SendStage(lambda d: AppriseSender(f"json://127.0.0.1:{endpoint.port}/hook"), FakeClock(T0 + 1)),
                  RetryStage(1, 10, 3), RecordStage(store.outbox, NotifierMetrics())]
        assert run_stages(stages, firing).outcome.result == "muted"
        # the firing page never went out: its resolved page does not either, and no stage after mute ran
        assert run_stages(stages, resolved).outcome.result == "muted"
    assert endpoint.received == []
    assert store.outbox.states() == {"muted": 2}


# --- the whole pipeline for people's contacts: attempts on the timeline, fallback, storm -------------
PEOPLE = """
people:
  alice:
    contacts:
      phone: {{url: "json://127.0.0.1:{phone}/phone"}}
      sms: {{url: "json://127.0.0.1:{sms}/sms"}}
policies:
  main:
    tiers:
      - notify: [{{person: alice}}]
        escalate_after: 5m
default_policy: main
storm: {{max_pages_per_minute: 2}}
"""


class PagesNobody:
    """An intake that opens the incident and enqueues no page (the test enqueues its own)."""

    reopen_within_s = 0.0
    resolve_after_s = 0.0

    def on_ingest(self, event) -> int:
        return 0


class Pipeline:
    """The notifier's real delivery stages and worker on `db_url`, driven by a hand-moved clock."""

    def __init__(self, db_url, tmp_path, phone_port, sms_port):
        self.store = Store(db_url)
        self.clock = FakeClock()
        oncall = parse_oncall(PEOPLE.format(phone=phone_port, sms=sms_port))
        settings = make_settings(tmp_path, db_url=db_url, retry_base_s=1.0, fallback_after_attempts=3)
        self.worker = DeliveryWorker(self.store.outbox, delivery_stages(self.store, oncall, settings,
                                                                        NotifierMetrics(), self.clock),
                                     self.clock, poll_interval_s=1)

    def page_alice(self, group: str, contact="phone", index=0) -> int:
        """An incident of its own, and its tier-1 page to alice's `contact`, as the escalation engine enqueues it."""
        incident_id = ingest(self.store, payload(alert(group), group_key=group), now=self.clock.now,
                             route=PagesNobody()).incident_id
        with self.store.engine.begin() as conn:
            self.store.outbox.enqueue(conn, None, incident_id, "firing", [NewDelivery(
                "alice", index, "other", f"[FIRING:1] {group}", "body", tier=0, contact=contact,
                page_key=f"{incident_id}/0/0/0/alice/{contact}")], self.clock.now)
        return incident_id

    def run_at(self, at: float) -> int:
        self.clock.now = at
        return self.worker.run_once()


@pytest.fixture
def endpoints():
    with RecordingEndpoint(failures=10**6) as phone, RecordingEndpoint() as sms:
        yield phone, sms


@pytest.fixture
def pipeline(db_url, tmp_path, endpoints):
    phone, sms = endpoints
    built = Pipeline(db_url, tmp_path, phone.port, sms.port)
    yield built
    built.store.close()


def test_a_contact_failing_three_times_hands_the_page_to_the_next_and_the_timeline_shows_each_attempt(
        pipeline, endpoints):
    phone, sms = endpoints
    incident = pipeline.page_alice("g1")
    for at in (T0, T0 + 1, T0 + 3):  # backoff 1 s, then 2 s
        assert pipeline.run_at(at) == 1
    assert pipeline.run_at(T0 + 3) == 1  # the SMS, due at once
    assert [r["title"] for r in sms.received] == ["[FIRING:1] g1"]
    events = [(e["kind"], e["detail"].get("contact"), e["detail"].get("ok")) for e in pipeline.store.timeline.of(incident)
              if e["kind"].startswith("page_")]
    assert events == [("page_attempt", "phone", False)] * 3 + [("page_fallback", "sms", None),
                                                               ("page_attempt", "sms", True)]
    fallback = next(e for e in pipeline.store.timeline.of(incident) if e["kind"] == "page_fallback")
    assert fallback["detail"]["failed_contact"] == "phone" and fallback["detail"]["attempts"] == 3
    assert [(p["contact"], p["state"], len(p["attempts"])) for p in pipeline.store.outbox.pages_of(incident)] == [
        ("phone", "failed", 3), ("sms", "sent", 1)]
    assert pipeline.run_at(T0 + 1000) == 0  # the phone is not tried again


def test_the_last_contact_keeps_its_ordinary_retries(pipeline, endpoints):
    phone, sms = endpoints
    sms.failures = 4
    incident = pipeline.page_alice("g1", contact="sms", index=1)
    for at in (T0, T0 + 1, T0 + 3, T0 + 7, T0 + 15):
        assert pipeline.run_at(at) == 1
    assert [(p["contact"], p["state"]) for p in pipeline.store.outbox.pages_of(incident)] == [("sms", "sent")]


def test_past_the_storm_limit_the_waiting_pages_become_one_digest_and_none_is_lost(pipeline, endpoints):
    phone, sms = endpoints
    incidents = [pipeline.page_alice(f"g{n}", contact="sms", index=1) for n in range(5)]
    assert pipeline.run_at(T0) == 2  # two pages a minute to alice's SMS; the three others are folded
    assert len(sms.received) == 2
    assert pipeline.run_at(T0 + 59) == 0  # the digest waits for the minute window
    assert pipeline.run_at(T0 + 60) == 1
    digest = sms.received[-1]
    assert digest["title"].startswith("[DIGEST:3] 3 pages for 3 incident(s)")
    assert "stands for 3 pages" in digest["message"]
    pages = [page for incident in incidents for page in pipeline.store.outbox.pages_of(incident)]
    folded = [page for page in pages if page["state"] == "digested"]
    [digest_row] = {page["digest_of"] for page in folded}
    assert sorted(p["state"] for p in pages) == ["digested"] * 3 + ["sent"] * 3  # two pages and the digest
    assert [p["state"] for p in pages if p["id"] == digest_row] == ["sent"]
    folded_incidents = {incident for incident in incidents
                        if any(p["state"] == "digested" for p in pipeline.store.outbox.pages_of(incident))}
    assert len(folded_incidents) == 3 and all(f"#{i} firing" in digest["message"] for i in folded_incidents)
    digested_events = [e for i in incidents for e in pipeline.store.timeline.of(i) if e["kind"] == "page_digested"]
    assert len(digested_events) == 3 and {e["detail"]["digest"] for e in digested_events} == {digest_row}


def test_a_storm_lasting_minutes_sends_one_digest_per_window_of_only_what_is_still_open(pipeline, endpoints):
    """Five pages a minute, for three minutes, to a contact allowed two: one digest per minute window
    (the later pages join the digest that waits), each listing only pages of incidents still open, and
    counting what it stands for as the outbox does."""
    phone, sms = endpoints
    opened, digests_per_run = [], []

    def run(at: float) -> None:
        before = len(sms.received)
        pipeline.run_at(at)
        digests_per_run.append(sum(r["title"].startswith("[DIGEST") for r in sms.received[before:]))
    for minute in range(3):
        opened += [pipeline.page_alice(f"m{minute}-{n}", contact="sms", index=1) for n in range(5)]
        for second in (0, 20, 40):
            run(T0 + 60 * minute + second)
        if minute == 0:  # one of the incidents the waiting digest stands for is resolved meanwhile
            owned = [(incident, p) for incident in opened for p in pipeline.store.outbox.pages_of(incident)]
            waiting = {p["id"] for _, p in owned if p["state"] == "pending"}
            settled = next(incident for incident, p in owned if p["digest_of"] in waiting)
            with pipeline.store.engine.begin() as conn:
                incident_state.resolve(conn, settled, "alice", T0 + 45)
    for at in (T0 + 180, T0 + 240, T0 + 300):
        run(at)
    digests = [r for r in sms.received if r["title"].startswith("[DIGEST")]
    pages = [r for r in sms.received if not r["title"].startswith("[DIGEST")]
    assert max(digests_per_run) == 1  # never two digests at once, never one per page
    assert len(pages) + len(digests) <= 2 * 5  # two a minute over five minutes: the limit holds
    assert digests_per_run[3] == 1  # the waiting digest goes out as its window opens: pages never starve it
    rows = [p for incident in opened for p in pipeline.store.outbox.pages_of(incident)]
    folded = [p for p in rows if p["state"] == "digested"]
    assert len(folded) + len(pages) == 15 and len({p["digest_of"] for p in folded}) == len(digests)
    listed = sum(int(d["title"].split(":")[1].split("]")[0]) for d in digests)
    assert listed == len(folded) - 1 and f"#{settled} firing" not in "".join(d["message"] for d in digests)
    assert any("1 more held back were acknowledged or resolved since" in d["message"] for d in digests)


def test_a_digest_of_pages_whose_incidents_all_closed_is_not_sent(pipeline, endpoints):
    phone, sms = endpoints
    incidents = [pipeline.page_alice(f"g{n}", contact="sms", index=1) for n in range(4)]
    assert pipeline.run_at(T0) == 2
    with pipeline.store.engine.begin() as conn:
        for incident in incidents:
            incident_state.resolve(conn, incident, "alice", T0 + 30)
    pipeline.run_at(T0 + 60)
    assert [r for r in sms.received if r["title"].startswith("[DIGEST")] == []
    digest_rows = {p["digest_of"] for i in incidents for p in pipeline.store.outbox.pages_of(i) if p["digest_of"]}
    assert len(digest_rows) == 1


def test_only_people_fall_back_first_version_targets_paged_every_channel_at_once(tmp_path):
    inbox = LocalInboxSender(None, lambda: T0)  # choosing the next contact sends nothing
    people = Channels(parse_oncall(PEOPLE.format(phone=9, sms=9)), inbox, 30)
    legacy = Channels(parse_oncall(TWO_CHANNELS), inbox, 30)

    def page_to(target, index, kind):
        return Delivery(1, 1, target, index, kind, "t", "b", "firing", 2, T0, tier=0)
    following = people.next_contact(page_to("alice", 0, "other"))
    assert (following.contact_index, following.contact, following.kind) == (1, "sms", "other")
    assert people.next_contact(page_to("alice", 1, "other")) is None  # the last contact
    assert legacy.next_contact(page_to("sre", 0, "inbox")) is None
