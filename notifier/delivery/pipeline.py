"""The delivery pipeline, stage by stage, in the spirit of Alertmanager's notify pipeline, with a
durable outbox between routing and sending:

    webhook / escalation ─▶ outbox ─▶ mute ─▶ dedup ─▶ storm ─▶ throttle ─▶ send ─▶ retry ─▶ fallback ─▶ record
    (pages enqueued in            (the worker, for each claimed delivery; every stage is a
     their own transaction)        class in `stages.py`, as Alertmanager's notify.go keeps them)

Who is paged, and when, is decided before the outbox (the engine's intake, `engine/escalation.py`, in the
webhook's transaction, and the escalation loop for later tiers); every stage after it works on one
claimed page at a time.
"""

from __future__ import annotations

import json
from functools import partial

from vigil.notifier.core.clock import Clock
from vigil.notifier.delivery.channels import Channels, LocalInboxSender
from vigil.notifier.delivery.stages import (
    DedupStage, digest_text, FallbackStage, MuteStage, RecordStage, RetryStage, SendStage, Stage, StormStage,
    ThrottleStage, window_holding,
)
from vigil.notifier.delivery.webpush import WebPushSender
from vigil.notifier.delivery.worker import LEASE_S
from vigil.notifier.metrics import NotifierMetrics
from vigil.notifier.settings import NotifierSettings
from vigil.notifier.store import Store, incident_state
from vigil.notifier.store.digests import Digests
from vigil.notifier.store.engine import reading
from vigil.notifier.store.maintenance import Maintenance
from vigil.oncall.model import OncallConfig


def delivery_stages(store: Store, oncall: OncallConfig, settings: NotifierSettings, metrics: NotifierMetrics,
                    clock: Clock, push: WebPushSender | None = None) -> list[Stage]:
    """The stages a claimed delivery passes, in order (`push`: Web Push's sender; None: push is off)."""
    push = push or WebPushSender(store.push_subscriptions, None, settings.vapid_subject, clock)
    channels = Channels(oncall, LocalInboxSender(store.inbox, clock), settings.max_pages_per_minute, push)
    outbox = store.outbox
    digests = Digests(store.engine)
    return [
        MuteStage(partial(incident_for_mute, store), MaintenanceHold(Maintenance(store.engine), oncall),
                  outbox.firing_page_fate),
        DedupStage(outbox.newer_page_waiting),
        StormStage(channels.storm_limit, lambda delivery, claimed_at, due_at, passed: digests.fold(
            delivery, claimed_at, LEASE_S, due_at, digest_text, passed), partial(digests.refresh, compose=digest_text)),
        ThrottleStage(channels.per_minute),
        SendStage(channels.sender_for, clock),
        RetryStage(settings.retry_base_s, settings.retry_max_s, settings.max_attempts),
        FallbackStage(settings.fallback_after_attempts, channels.next_contact),
        RecordStage(outbox, metrics),
    ]


class MaintenanceHold:
    """(labels, now) -> the `page_held` detail of the maintenance window holding such pages, or None:
    the windows made through the API/CLI first, then those of the on-call file."""

    def __init__(self, maintenance: Maintenance, oncall: OncallConfig):
        self._maintenance = maintenance
        self._oncall = oncall

    def __call__(self, labels: dict, now: float) -> dict | None:
        held = window_holding(self._maintenance, self._oncall, labels, now)
        return None if held is None else held.detail


def incident_for_mute(store: Store, incident_id: int) -> dict | None:
    """What the mute stage needs of an incident (state, labels): one row, read without a write lock."""
    with reading(store.engine) as conn:
        row = incident_state.row(conn, incident_id)
    return None if row is None else {"state": incident_state.state_of(row), "labels": json.loads(row.labels)}
