"""vigil on-call: the configuration (targets, their channels, routes) and the routing that picks who is
paged for an alert group. The notifier runs the routing; the model and its rules live here."""

from vigil.oncall.loader import OncallConfigError, load_oncall, parse_oncall
from vigil.oncall.model import AppriseChannel, InboxChannel, OncallConfig, Route, Target
from vigil.oncall.routing import PageRoute, Step, channel_wants, route_page, steps_for, target_for

__all__ = [
    "AppriseChannel",
    "InboxChannel",
    "OncallConfig",
    "OncallConfigError",
    "PageRoute",
    "Route",
    "Step",
    "Target",
    "channel_wants",
    "load_oncall",
    "parse_oncall",
    "route_page",
    "steps_for",
    "target_for",
]
