"""Each delivery stage on its own, on a real SQLite store, with a clock the test moves by hand."""

from __future__ import annotations

import pytest
from prometheus_client import generate_latest

from vigil.notifier.deliveries import NewDelivery
from vigil.notifier.delivery.apprise_sender import AppriseSender
from vigil.notifier.delivery.dedup import DedupStage
from vigil.notifier.delivery.mute import MuteStage
from vigil.notifier.delivery.record import RecordStage
from vigil.notifier.delivery.retry import RetryStage
from vigil.notifier.delivery.route import RouteStage
from vigil.notifier.delivery.send import CHANNEL_GONE, SendStage
from vigil.notifier.delivery.stage import Outcome, Page, run_stages
from vigil.notifier.delivery.throttle import ThrottleStage
from vigil.notifier.metrics import NotifierMetrics
from vigil.notifier.models import WebhookPayload
from vigil.notifier.store import Store
from vigil.oncall.loader import parse_oncall
from test_notifier_support import INBOX_ONLY, RecordingEndpoint, alert, payload

T0 = 1_000_000.0
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
    route = route or RouteStage(parse_oncall(oncall))
    return store.notifications.ingest(WebhookPayload.model_validate(body), now, route)


def claimed(store, now=T0) -> list[Page]:
    return [Page(delivery, now) for delivery in store.outbox.claim_due(now, 20, lease_s=30)]


class FakeClock:
    def __init__(self, now=T0, step=0.0):
        self.now, self.step = now, step

    def __call__(self) -> float:
        self.now += self.step
        return self.now


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
    assert page.delivery.body.startswith("incident #1\n- firing GpuLost node=node-1 gpu=0: GPU fell off the bus")


def test_a_page_routed_with_a_wait_stays_in_the_outbox_until_it_is_due(store):
    def escalate_after_5_minutes(payload, decision, incident_id, labels):  # what an escalation step enqueues
        return [NewDelivery("manager", 0, "inbox", "t", "b", delay_s=300)]
    ingest(store, payload(alert("a")), route=escalate_after_5_minutes)
    assert claimed(store, T0 + 299) == []
    [page] = claimed(store, T0 + 300)
    assert page.delivery.target == "manager"


# --- mute ------------------------------------------------------------------------------------------
def test_mute_stops_a_waiting_firing_page_whose_incident_has_resolved(store):
    ingest(store, payload(alert("a")))
    mute = MuteStage(store.notifications.incident_resolved)
    [firing] = claimed(store)
    assert mute(firing).outcome is None  # the incident still fires: go on
    ingest(store, payload(alert("a", status="resolved")), now=T0 + 5)
    [resolved] = claimed(store, T0 + 5)  # the firing page is leased; it comes back below
    [waiting] = claimed(store, T0 + 30)  # its lease is over, and it is still pending
    assert waiting.delivery.id == firing.delivery.id
    assert mute(waiting).outcome == Outcome("muted", T0 + 30)
    assert mute(resolved).outcome is None  # the resolved page tells the story


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
        stages = [MuteStage(store.notifications.incident_resolved), DedupStage(store.outbox.newer_page_waiting),
                  ThrottleStage(lambda d: 10),
                  SendStage(lambda d: AppriseSender(f"json://127.0.0.1:{endpoint.port}/hook"), FakeClock(T0 + 1)),
                  RetryStage(1, 10, 3), RecordStage(store.outbox, NotifierMetrics())]
        assert run_stages(stages, firing).outcome.result == "muted"
        assert run_stages(stages, resolved).outcome.result == "sent"
    assert [r["title"].split("]")[0] for r in endpoint.received] == ["[RESOLVED"]
    assert store.outbox.states() == {"muted": 1, "sent": 1}
