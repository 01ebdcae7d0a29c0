"""Route stage: fan a notification that pages out into outbox rows, one per step and channel.

It runs inside the webhook's transaction (the store calls it), so the pages are enqueued atomically
with their notification; every later stage runs in the worker on one claimed row at a time. Who is
paged is decided by `vigil.oncall.routing` from the incident's labels, as a list of **steps**. Today
a route has one step (its target, at once). **Escalation tiers plug in here**: a step with `after_s`
is enqueued due that many seconds later, and the mute stage drops it if the incident has resolved by
then; the on-call engine adds the steps (and acknowledgement) to the routing, not to this pipeline.
"""

from __future__ import annotations

from vigil.notifier.deliveries import NewDelivery
from vigil.notifier.delivery.compose import compose_page
from vigil.notifier.incidents import IncidentDecision
from vigil.notifier.models import WebhookPayload
from vigil.oncall.model import OncallConfig
from vigil.oncall.routing import route_page


class RouteStage:
    """A `PagePlanner`: (payload, decision, incident id, incident labels) -> pages to enqueue."""

    name = "route"

    def __init__(self, oncall: OncallConfig):
        self._oncall = oncall

    def __call__(self, payload: WebhookPayload, decision: IncidentDecision, incident_id: int,
                 labels: dict) -> list[NewDelivery]:
        routes = route_page(self._oncall, labels)
        if not routes:
            return []
        text = compose_page(payload, decision.page_status, incident_id)
        # a resolved page goes out at once to every step: it ends what the firing page started
        return [NewDelivery(route.target, route.channel_index, route.channel_type, text.title, text.body,
                            delay_s=route.after_s if decision.page_status == "firing" else 0.0)
                for route in routes]
