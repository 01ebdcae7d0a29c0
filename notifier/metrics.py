"""The notifier's own Prometheus metrics, in a registry owned by each app instance."""

from __future__ import annotations

import time
from typing import Callable

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

from vigil.notifier.store import Store
from vigil.notifier.store.outbox import SCHEDULED, STATES
from vigil.oncall.model import OncallConfig

SLA_TARGETS = ("ack", "resolve")  # the response targets of a priority (vigil_notifier_sla_breaches_total{target})
STATUSES = ("firing", "resolved")  # of a webhook notification
PAGE_RESULTS = ("sent", "failed")  # the delivery results every channel shows from the start (the others come when they happen)
REJECT_REASONS = ("unauthorized", "unsupported_media_type", "too_large", "invalid_json", "too_deep",
                  "invalid_text", "invalid_payload")


class NotifierMetrics:
    def __init__(self, registry: CollectorRegistry | None = None):
        self.registry = registry or CollectorRegistry()
        self.received = Counter("vigil_notifier_webhook_received", "Webhook notifications stored, by status.",
                                ["status"], registry=self.registry)
        self.duplicates = Counter("vigil_notifier_webhook_duplicates",
                                  "Repeated deliveries of an already stored notification.", registry=self.registry)
        self.rejected = Counter("vigil_notifier_webhook_rejected",
                                "Webhook requests refused, by reason; nothing was stored from them.",
                                ["reason"], registry=self.registry)
        for reason in REJECT_REASONS:
            self.rejected.labels(reason)  # present at 0 from the start, so rate() works
        self.deliveries = Counter("vigil_notifier_deliveries", "Page delivery attempts, by channel and result.",
                                  ["channel", "result"], registry=self.registry)
        self.latency = Histogram("vigil_notifier_delivery_latency_seconds",
                                 "From webhook received to page delivered, by channel.", ["channel"],
                                 buckets=(0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900),
                                 registry=self.registry)
        self.server_errors = Counter("vigil_notifier_http_server_errors",
                                     "Requests answered with a 5xx (an internal failure, never bad input), by route.",
                                     ["route"], registry=self.registry)
        self.escalations = Counter("vigil_notifier_escalations",
                                   "Escalation tiers paged, by tier (0-based; a repeat counts again).", ["tier"],
                                   registry=self.registry)
        self.sla_breaches = Counter("vigil_notifier_sla_breaches",
                                    "Incidents that missed a response target, by priority and target (ack, resolve).",
                                    ["priority", "target"], registry=self.registry)
        self.escalation_delay = Histogram("vigil_notifier_escalation_delay_seconds",
                                          "From an escalation step's due time to its pages enqueued.",
                                          buckets=(0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60),
                                          registry=self.registry)
        self.reconciled = Counter("vigil_notifier_reconciled_alerts",
                                  "Firing alerts found in Alertmanager at start that the store did not know.",
                                  registry=self.registry)
        self.resolved_gone = Counter("vigil_notifier_incidents_resolved_gone",
                                     "Incidents resolved because Alertmanager no longer held their alerts "
                                     "(a resolution lost while the notifier or the stack was down).",
                                     registry=self.registry)
        for status in STATUSES:
            self.received.labels(status)

    def start_at_zero(self, oncall: OncallConfig) -> None:
        """The counters' series the on-call file makes possible, at 0 before anything happens: each
        contact kind's sent and failed pages, each escalation tier, each priority's response targets. A
        quiet fleet's dashboards then read 0 rather than "No data", and `increase()` counts the first page."""
        kinds = ({contact.kind for person in oncall.people.values() for contact in person.contacts.values()}
                 | {channel.type for target in oncall.targets.values() for channel in target.channels})
        for kind in sorted(k for k in kinds if k):
            for result in PAGE_RESULTS:
                self.deliveries.labels(kind, result)
        for tier in range(max((len(policy.tiers) for policy in oncall.policies.values()), default=1)):
            self.escalations.labels(str(tier))
        for priority, sla in sorted(oncall.priorities.items()):
            for target in SLA_TARGETS:
                if getattr(sla, f"{target}_within", None) is not None:
                    self.sla_breaches.labels(priority, target)


class StoreCollector:
    """Read at scrape time from the store: the outbox by state, the incidents firing now and the
    escalations waiting for their next step.

    A growing `pending` or any `failed` means pages are not getting through: alert on it.
    """

    def __init__(self, store: Store, clock: Callable[[], float] = time.time):
        self._store = store
        self._clock = clock

    def collect(self):
        states, firing = self._store.outbox.states(self._clock()), self._store.notifications.firing_count()
        outbox = GaugeMetricFamily("vigil_notifier_outbox_deliveries", "Page deliveries in the outbox, by state "
                                   "(scheduled: pending on purpose, due later).", labels=["state"])
        for state in (*STATES, SCHEDULED):
            outbox.add_metric([state], states.get(state, 0))
        yield outbox
        yield GaugeMetricFamily("vigil_notifier_incidents_firing", "Incidents currently firing.", value=firing)
        yield GaugeMetricFamily("vigil_notifier_escalations_pending",
                                "Incidents whose escalation waits for its next step (a tier, or an ack's expiry).",
                                value=self._store.escalations.pending_count())
        yield open_incidents(self._store.notifications.open_faults(OPEN_SHOWN))


OPEN_SHOWN = 200  # the newest open incidents published one series each (bounded: a storm is not a label explosion)
OPEN_LABELS = ("alertname", "node", "gpu", "job_id", "team")


def open_incidents(faults: list[tuple[int, dict, str | None, bool]]) -> GaugeMetricFamily:
    """`vigil_incident_open`: 1 per incident firing now (one per fault: symptoms that joined one are left
    out), what Grafana draws as an annotation region on the dashboards of its node, GPU or job."""
    family = GaugeMetricFamily("vigil_incident_open", "1 while the incident is open (firing and joined to no other); "
                               "the dashboards' incident annotations.",
                               labels=["incident_id", "priority", "state", *OPEN_LABELS])
    for incident_id, labels, priority, acknowledged in faults:
        family.add_metric([str(incident_id), priority or "none", "acknowledged" if acknowledged else "triggered",
                           *(str(labels.get(key, "")) for key in OPEN_LABELS)], 1)
    return family


class HeartbeatCollector:
    """The watched heartbeats, read at scrape time from the store (every notifier on one database
    shows the same): when each was last heard, its timeout, whether it is missing, and its beats."""

    def __init__(self, monitor):  # an `engine.heartbeat.HeartbeatMonitor`
        self._monitor = monitor

    def collect(self):
        labels = ["name"]
        seen = GaugeMetricFamily("vigil_notifier_heartbeat_last_seen_timestamp_seconds",
                                 "When the heartbeat was last heard (UNIX seconds); absent until its first beat.",
                                 labels=labels)
        timeout = GaugeMetricFamily("vigil_notifier_heartbeat_timeout_seconds",
                                    "How long the heartbeat may stay silent before its incident opens.", labels=labels)
        missing = GaugeMetricFamily("vigil_notifier_heartbeat_missing",
                                    "1 while the heartbeat is missing (its incident opened), else 0.", labels=labels)
        beats = CounterMetricFamily("vigil_notifier_heartbeat_beats", "Beats heard.", labels=labels)
        specs = self._monitor.specs
        rows = self._monitor.rows() if specs else {}
        for name, spec in sorted(specs.items()):
            row = rows.get(name)
            timeout.add_metric([name], spec.timeout_s)
            missing.add_metric([name], int(row is not None and row.missing_since is not None))
            beats.add_metric([name], row.beats if row is not None else 0)
            if row is not None and row.last_seen_at is not None:
                seen.add_metric([name], row.last_seen_at)
        yield from (seen, timeout, missing, beats)
