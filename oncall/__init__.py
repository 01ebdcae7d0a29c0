"""vigil on-call: the on-call file (people, teams, schedules, escalation policies, routes, priorities)
and the pure planning API the notifier's engine calls (`plan.py`): which policy and priority an
incident gets, who each tier pages now, and which of a person's contacts get the page, and when.
The first version's target routing (`routing.py`) stays for files and callers that use it."""

from vigil.oncall.contacts import Contact
from vigil.oncall.loader import OncallConfigError, load_oncall, parse_oncall
from vigil.oncall.model import AppriseChannel, InboxChannel, MaintenanceWindow, OncallConfig, Person, Route, Target
from vigil.oncall.plan import (ContactPlan, ContactRef, IncidentRouting, PolicySpec, Sla, TierSpec, UnknownPolicy,
                               config_maintenance, contact_at, contact_plan, next_contact, policy_spec,
                               route_incident, sla_for, tier_people)
from vigil.oncall.routing import PageRoute, Step, channel_wants, route_page, steps_for, target_for

__all__ = [
    "AppriseChannel",
    "Contact",
    "ContactPlan",
    "ContactRef",
    "InboxChannel",
    "IncidentRouting",
    "MaintenanceWindow",
    "OncallConfig",
    "OncallConfigError",
    "PageRoute",
    "Person",
    "PolicySpec",
    "Route",
    "Sla",
    "Step",
    "Target",
    "TierSpec",
    "UnknownPolicy",
    "channel_wants",
    "config_maintenance",
    "contact_at",
    "contact_plan",
    "load_oncall",
    "next_contact",
    "parse_oncall",
    "policy_spec",
    "route_incident",
    "route_page",
    "sla_for",
    "steps_for",
    "target_for",
    "tier_people",
]
