"""Alert correlation: topology groups and inhibition rules mined from alert history."""

from aiops.correlate.alerts import AlertInputError, Firing, firings_from_json, firings_from_prometheus
from aiops.correlate.mining import PairEvidence, mine_inhibitions
from aiops.correlate.render import inhibit_rules, render_suggestions
from aiops.correlate.topology import AlertGroup, group_firings

__all__ = [
    "AlertGroup", "AlertInputError", "Firing", "PairEvidence", "firings_from_json", "firings_from_prometheus",
    "group_firings", "inhibit_rules", "mine_inhibitions", "render_suggestions",
]
