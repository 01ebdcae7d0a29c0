"""Route stage: who is paged for a stored notification, decided in the webhook's transaction.

The route stage is the on-call engine's intake (`vigil.notifier.engine.intake.EngineIntake`): it routes
the incident to an escalation policy (`vigil.oncall.plan.route_incident`), pages the policy's first tier
in the same transaction (each person through their contact plan: the right contact at the right hour),
and leaves the next step to the escalation loop (`notifier/engine/escalation.py`). A first-version
on-call file (`targets:` and `notify:` routes) becomes a one-tier policy, so it pages as before: every
channel of the target that wants the alert's severity, at once. Every later stage runs in the worker on
one claimed outbox row at a time.
"""

from __future__ import annotations

from vigil.notifier.engine.intake import EngineIntake


class RouteStage(EngineIntake):
    """The `IncidentPlanner` the store's ingest calls: `RouteStage(oncall, links=…, metrics=…)`."""

    name = "route"
