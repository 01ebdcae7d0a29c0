"""The delivery pipeline, stage by stage, in the spirit of Alertmanager's notify pipeline, with a
durable outbox between routing and sending:

    webhook ─▶ route ─▶ outbox ─▶ mute ─▶ dedup ─▶ throttle ─▶ send ─▶ retry ─▶ record
               (in the ingest       (the worker, for each claimed delivery; `stage.py` is
               transaction)          the interface, one module per stage)

Escalation tiers plug into the route stage (`route.py`, fed by `vigil.oncall.routing`).
"""

from __future__ import annotations

from vigil.notifier.clock import Clock
from vigil.notifier.delivery.channels import Channels
from vigil.notifier.delivery.dedup import DedupStage
from vigil.notifier.delivery.inbox_sender import InboxSender
from vigil.notifier.delivery.mute import MuteStage
from vigil.notifier.delivery.record import RecordStage
from vigil.notifier.delivery.retry import RetryStage
from vigil.notifier.delivery.send import SendStage
from vigil.notifier.delivery.stage import Stage
from vigil.notifier.delivery.throttle import ThrottleStage
from vigil.notifier.metrics import NotifierMetrics
from vigil.notifier.settings import NotifierSettings
from vigil.notifier.store import Store
from vigil.oncall.model import OncallConfig


def delivery_stages(store: Store, oncall: OncallConfig, settings: NotifierSettings, metrics: NotifierMetrics,
                    clock: Clock) -> list[Stage]:
    """The stages a claimed delivery passes, in order."""
    channels = Channels(oncall, InboxSender(settings.own_url, settings.token), settings.max_pages_per_minute)
    return [
        MuteStage(store.notifications.incident_resolved),
        DedupStage(store.outbox.newer_page_waiting),
        ThrottleStage(channels.per_minute),
        SendStage(channels.sender_for, clock),
        RetryStage(settings.retry_base_s, settings.retry_max_s, settings.max_attempts),
        RecordStage(store.outbox, metrics),
    ]
