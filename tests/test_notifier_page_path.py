"""The modules a page crosses in the notifier, traced in a real server: from Alertmanager's webhook POST
to the call that reaches a person, and from a tier's expired wait to the next tier's page leaving.

The path is the vigil modules on the call stack at each hand-off the page makes, in order: where the
body is parsed and where the POST hands the notification to the group committer (the event loop),
where the page is written to the outbox (the committer's, or the escalation loop's, transaction), and
where the channel's sender is called (the delivery worker); with the module of the function called
there. docs/architecture.md shows both paths; a change to either is made here
and there on purpose. The apprise sender is replaced by a recorder: the path ends at its `send`."""

from __future__ import annotations

import inspect
import threading

import pytest
import requests

from vigil.notifier.ingest import webhook
from vigil.notifier.delivery.channels import AppriseSender, SendResult
from vigil.notifier.ingest.group_commit import GroupCommit
from vigil.notifier.store.outbox import Outbox
from test_notifier_support import AUTH, NotifierServer, alert, free_port, make_settings, payload, wait_for

TWO_TIERS = """
people:
  alice: {contacts: {phone: {url: "json://127.0.0.1:9/alice", kind: phone}}}
  bob: {contacts: {phone: {url: "json://127.0.0.1:9/bob", kind: phone}}}
policies:
  main:
    tiers:
      - {notify: [{person: alice}], escalate_after: 5m}
      - {notify: [{person: bob}], escalate_after: 5m}
default_policy: main
"""
# the page path and the escalation path as docs/architecture.md shows them
PAGE_PATH = [
    "vigil.notifier.ingest.webhook", "vigil.notifier.ingest.parse", "vigil.notifier.ingest.group_commit",
    "vigil.notifier.engine.escalation", "vigil.notifier.store.outbox",
    "vigil.notifier.delivery.worker", "vigil.notifier.delivery.stages", "vigil.notifier.delivery.channels",
]
ESCALATION_PATH = [
    "vigil.notifier.engine.escalation_loop", "vigil.notifier.engine.escalation", "vigil.notifier.store.outbox",
    "vigil.notifier.delivery.worker", "vigil.notifier.delivery.stages", "vigil.notifier.delivery.channels",
]


class HandOffs:
    """Records the vigil modules on the stack (outermost first) each time a patched function runs."""

    def __init__(self):
        self.stacks: list[tuple[str, list[str]]] = []
        self.lock = threading.Lock()

    def record(self, where: str, patched) -> None:
        """The stack of the caller of `patched` (replaced by the test's recorder), and `patched`'s module."""
        modules = []
        for frame in reversed(inspect.stack(context=0)[2:]):
            name = frame.frame.f_globals.get("__name__", "")
            if name.startswith("vigil.") and name not in modules:
                modules.append(name)
        if patched.__module__ not in modules:
            modules.append(patched.__module__)
        with self.lock:
            self.stacks.append((where, modules))

    def path(self, *wheres: str) -> list[str]:
        """The modules of the first stack recorded at each of `wheres`, in that order, each module once."""
        seen: list[str] = []
        for where in wheres:
            stack = next(modules for at, modules in self.stacks if at == where)
            seen += [m for m in stack if m not in seen]
        return seen


@pytest.fixture
def traced(monkeypatch):
    hand_offs = HandOffs()
    store, enqueue, parse = GroupCommit.store, Outbox.enqueue, webhook.webhook_payload

    async def traced_parse(*args, **kwargs):
        hand_offs.record("parse", parse)
        return await parse(*args, **kwargs)

    async def traced_store(self, *args, **kwargs):
        hand_offs.record("group commit", store)
        return await store(self, *args, **kwargs)

    def traced_enqueue(self, *args, **kwargs):
        hand_offs.record("outbox", enqueue)
        return enqueue(self, *args, **kwargs)

    def recorded_send(self, delivery):
        hand_offs.record(f"send {delivery.target} tier {delivery.tier}", send)
        return SendResult(True)

    send = AppriseSender.send
    monkeypatch.setattr(webhook, "webhook_payload", traced_parse)  # the name the webhook route calls
    monkeypatch.setattr(GroupCommit, "store", traced_store)
    monkeypatch.setattr(Outbox, "enqueue", traced_enqueue)
    monkeypatch.setattr(AppriseSender, "send", recorded_send)
    return hand_offs


def sent(hand_offs: HandOffs, where: str) -> bool:
    return any(at == where for at, _ in hand_offs.stacks)


def test_the_page_path_and_the_escalation_path(traced, tmp_path, fake_clock):
    settings = make_settings(tmp_path, port=free_port())
    with NotifierServer(settings, TWO_TIERS, clock=fake_clock) as server:
        posted = requests.post(f"{server.url}/api/v1/alerts/alertmanager", headers=AUTH, timeout=10,
                               json=payload(alert("gpu-lost")))
        assert posted.status_code == 200, posted.text
        wait_for(lambda: sent(traced, "send alice tier 0"), timeout=15)
        page_path = traced.path("parse", "group commit", "outbox", "send alice tier 0")
        traced.stacks.clear()
        fake_clock.advance(301)  # tier 1's wait is over: the escalation loop pages tier 2
        wait_for(lambda: sent(traced, "send bob tier 1"), timeout=15)
        escalation_path = traced.path("outbox", "send bob tier 1")
    print(f"page path, {len(page_path)} modules:", " → ".join(page_path))
    print(f"escalation path, {len(escalation_path)} modules:", " → ".join(escalation_path))
    assert page_path == PAGE_PATH
    assert escalation_path == ESCALATION_PATH
