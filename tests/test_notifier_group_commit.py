"""Group commit (notifier/ingest/group_commit.py): concurrent webhook posts stored in shared transactions,
each answered only once committed, on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import threading

import pytest
import sqlalchemy as sa

from vigil.notifier.engine.escalation import EngineIntake
from vigil.notifier.metrics import NotifierMetrics
from vigil.notifier.core.models import WebhookPayload
from vigil.notifier.store import Store
from vigil.notifier.ingest.group_commit import GroupCommit
from vigil.oncall.loader import parse_oncall
from test_notifier_support import alert, fail_the_next_commit, payload


@pytest.fixture
def store(db_url):
    opened = Store(db_url)
    yield opened
    opened.close()


class HeldIntake(EngineIntake):
    """The on-call engine's intake (one tier, one person), as production runs it; its first call waits
    until `release` is set, so the posts pile up behind it; it breaks on the notification for `fail_node`."""

    def __init__(self, fail_node: str | None = None):
        super().__init__(parse_oncall(ONE_TIER))
        self.release = threading.Event()
        self.fail_node = fail_node
        self._first = True

    def on_ingest(self, event):
        if self._first:
            self._first = False
            assert self.release.wait(10)
        if event.payload.alerts[0].labels.get("node") == self.fail_node:
            raise RuntimeError("planner broke")
        return super().on_ingest(event)


def body(name: str) -> WebhookPayload:
    return WebhookPayload.model_validate(payload(alert(name, node=f"node-{name}")))


def commits(engine: sa.Engine) -> list[int]:
    counted = [0]
    sa.event.listen(engine, "commit", lambda _conn: counted.__setitem__(0, counted[0] + 1))
    return counted


def stored_ids(store: Store) -> set[int]:
    return {n["id"] for n in store.notifications.list_notifications(100)}


def test_concurrent_posts_share_transactions_and_each_answer_waits_for_the_commit(store, db_url):
    group, planner, counted = GroupCommit(store.engine, store.notifications), HeldIntake(), commits(store.engine)
    seen_at_answer: dict[int, bool] = {}
    all_checked = threading.Event()
    observer = Store(db_url)  # another connection pool: sees only what is committed

    def check(future):
        result = future.result()
        seen_at_answer[result.notification_id] = result.notification_id in stored_ids(observer)
        if len(seen_at_answer) == 21:
            all_checked.set()

    futures = [group.submit(body("first"), 1000.0, planner)]
    futures[0].add_done_callback(check)
    for i in range(20):
        futures.append(group.submit(body(f"a{i}"), 1000.0, planner))
        futures[-1].add_done_callback(check)
    planner.release.set()
    results = [f.result(10) for f in futures]
    assert all_checked.wait(10)
    observer.close()
    assert len({r.notification_id for r in results}) == 21 and not any(r.duplicate for r in results)
    assert all(seen_at_answer.values()) and len(seen_at_answer) == 21
    assert counted[0] <= 3  # the first post alone, then the 20 waiting behind it together
    assert store.outbox.states() == {"pending": 21}


def test_a_duplicate_inside_one_batch_is_stored_once(store):
    group, planner = GroupCommit(store.engine, store.notifications), HeldIntake()
    first = group.submit(body("first"), 1000.0, planner)
    twins = [group.submit(body("twin"), 1000.0, planner) for _ in range(3)]
    planner.release.set()
    first.result(10)
    results = [f.result(10) for f in twins]
    assert sorted(r.duplicate for r in results) == [False, True, True]
    assert len({r.notification_id for r in results}) == 1
    assert len(store.notifications.list_notifications(100)) == 2


def test_a_failing_member_is_refused_alone_and_the_others_are_stored(store):
    group, planner = GroupCommit(store.engine, store.notifications), HeldIntake(fail_node="node-bad")
    first = group.submit(body("first"), 1000.0, planner)
    good = [group.submit(body(f"g{i}"), 1000.0, planner) for i in range(2)]
    bad = group.submit(body("bad"), 1000.0, planner)
    good.append(group.submit(body("g2"), 1000.0, planner))
    planner.release.set()
    with pytest.raises(RuntimeError, match="planner broke"):
        bad.result(10)
    ids = {f.result(10).notification_id for f in [first, *good]}
    assert ids == stored_ids(store) and len(ids) == 4
    assert store.outbox.states() == {"pending": 4}  # the bad member's rows were rolled back with it


def test_a_batch_whose_commit_fails_is_refused_whole_and_the_next_batch_of_the_burst_is_stored(store):
    # the committer holds one connection for a burst: a failed COMMIT must not leave it in a transaction
    group, planner = GroupCommit(store.engine, store.notifications, linger_s=10.0), HeldIntake()
    fail_the_next_commit(store.engine)
    planner.release.set()
    with pytest.raises(RuntimeError, match="commit broke"):
        group.submit(body("first"), 1000.0, planner).result(10)
    later = [group.submit(body(f"l{i}"), 1000.0, planner) for i in range(3)]  # the same committer, still lingering
    results = [f.result(10) for f in later]
    assert {r.notification_id for r in results} == stored_ids(store) and len(results) == 3
    assert store.outbox.states() == {"pending": 3}  # nothing of the failed batch was stored


def test_posts_awaited_on_the_event_loop_share_a_transaction_and_each_gets_its_own_answer(store):
    # the webhook's path: `store` on the event loop, answers handed back to the loop per batch
    # (a failing member's effect on the others is `test_a_failing_member_is_refused_alone_...`'s)
    group, planner = GroupCommit(store.engine, store.notifications), HeldIntake()
    counted = commits(store.engine)
    if store.engine.dialect.name == "sqlite":
        # there the batches run on the loop itself, so holding the first one would hold the loop: the
        # posts queued while the first batch's BEGIN runs in its worker thread form the second batch
        planner.release.set()

    async def post_all():
        first = asyncio.create_task(group.store(body("first"), 1000.0, planner))
        await asyncio.sleep(0)  # the first one is queued (its batch holds the committer)
        rest = [asyncio.create_task(group.store(body(name), 1000.0, planner)) for name in ("a", "b", "a")]
        await asyncio.sleep(0)
        planner.release.set()
        return await asyncio.wait_for(asyncio.gather(first, *rest, return_exceptions=True), 10)

    first, a, b, a_again = asyncio.run(post_all())
    assert a_again.duplicate and a_again.notification_id == a.notification_id and not a.duplicate
    assert {first.notification_id, a.notification_id, b.notification_id} == stored_ids(store)
    assert counted[0] <= 2  # the first post (alone, unless the rest came in time), then the others together


def test_the_committer_thread_ends_when_idle(store):
    group = GroupCommit(store.engine, store.notifications, linger_s=0.05)
    planner = HeldIntake()
    planner.release.set()
    group.ingest(body("a"), 1000.0, planner)
    for thread in threading.enumerate():
        if thread.name == "vigil-notifier-group-commit":
            thread.join(5)
    assert not any(t.name == "vigil-notifier-group-commit" for t in threading.enumerate())


def test_on_the_event_loop_a_failing_member_is_refused_alone_and_the_others_are_stored(store):
    group, planner = GroupCommit(store.engine, store.notifications), HeldIntake(fail_node="node-bad")
    planner.release.set()

    async def post_all():
        return await asyncio.wait_for(asyncio.gather(
            *(group.store(body(name), 1000.0, planner) for name in ("a", "bad", "b", "c")),
            return_exceptions=True), 10)

    a, bad, b, c = asyncio.run(post_all())
    assert isinstance(bad, RuntimeError) and "planner broke" in str(bad)
    assert {a.notification_id, b.notification_id, c.notification_id} == stored_ids(store)
    assert store.outbox.states() == {"pending": 3}  # the bad member's rows were rolled back with it


def test_on_the_event_loop_a_batch_whose_commit_fails_is_refused_whole_and_the_next_one_is_stored(store):
    group, planner = GroupCommit(store.engine, store.notifications), HeldIntake()
    planner.release.set()
    fail_the_next_commit(store.engine)

    async def post_twice():
        first = await asyncio.gather(group.store(body("first"), 1000.0, planner), return_exceptions=True)
        later = await asyncio.gather(*(group.store(body(f"l{i}"), 1000.0, planner) for i in range(3)))
        return first[0], later

    failed, later = asyncio.run(post_twice())
    assert isinstance(failed, RuntimeError) and "commit broke" in str(failed)
    assert {r.notification_id for r in later} == stored_ids(store) and len(later) == 3
    assert store.outbox.states() == {"pending": 3}  # nothing of the failed batch was stored


ONE_TIER = """
people:
  alice: {contacts: {phone: {inbox: true, kind: phone}}}
policies:
  rota:
    tiers:
      - {name: DRI, notify: [{person: alice}], escalate_after: 5m}
default_policy: rota
"""


def own_incident(name: str) -> WebhookPayload:
    """A notification of its own alert group: it opens an incident of its own, whose first tier is paged."""
    return WebhookPayload.model_validate(payload(alert(name, node=f"node-{name}"), group_key=f'{{}}:{{g="{name}"}}'))


class RouteFailingOn(EngineIntake):
    """The on-call engine's intake, which breaks on the notification for `node`."""

    def __init__(self, node: str, metrics: NotifierMetrics):
        super().__init__(parse_oncall(ONE_TIER), None, metrics)
        self.node = node

    def on_ingest(self, event):
        if event.payload.alerts[0].labels.get("node") == self.node:
            raise RuntimeError("intake broke")
        return super().on_ingest(event)


def test_a_batch_stored_again_post_by_post_counts_each_tier_paged_once(store):
    """On SQLite a failing member rolls its batch back and the others are stored again alone: the first
    tier each of them paged is counted once, after the COMMIT that kept it (it was counted twice when
    counted inside the transaction)."""
    metrics = NotifierMetrics()
    group, route = GroupCommit(store.engine, store.notifications), RouteFailingOn("node-bad", metrics)

    async def post_all():
        return await asyncio.wait_for(asyncio.gather(
            *(group.store(own_incident(name), 1000.0, route) for name in ("a", "bad", "b", "c")),
            return_exceptions=True), 10)

    a, bad, b, c = asyncio.run(post_all())
    assert isinstance(bad, RuntimeError) and "intake broke" in str(bad)
    assert {a.deliveries, b.deliveries, c.deliveries} == {1} and len({a.incident_id, b.incident_id, c.incident_id}) == 3
    assert metrics.registry.get_sample_value("vigil_notifier_escalations_total", {"tier": "0"}) == 3
    assert metrics.registry.get_sample_value("vigil_notifier_escalation_delay_seconds_count") == 3


def test_tiers_paged_in_a_commit_that_fails_are_not_counted(store):
    metrics = NotifierMetrics()
    group, route = GroupCommit(store.engine, store.notifications), RouteFailingOn("none", metrics)
    fail_the_next_commit(store.engine)

    async def post_twice():
        first = await asyncio.gather(group.store(own_incident("first"), 1000.0, route), return_exceptions=True)
        return first[0], await group.store(own_incident("later"), 1000.0, route)

    failed, later = asyncio.run(post_twice())
    assert isinstance(failed, RuntimeError) and later.deliveries == 1
    assert metrics.registry.get_sample_value("vigil_notifier_escalations_total", {"tier": "0"}) == 1
