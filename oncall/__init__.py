"""vigil on-call configuration: targets, their channels, and the routes that pick who is paged."""

from vigil.oncall.loader import OncallConfigError, load_oncall, parse_oncall
from vigil.oncall.model import AppriseChannel, InboxChannel, OncallConfig, Route, Target, channel_wants

__all__ = [
    "AppriseChannel",
    "InboxChannel",
    "OncallConfig",
    "OncallConfigError",
    "Route",
    "Target",
    "channel_wants",
    "load_oncall",
    "parse_oncall",
]
