"""Alert correlation: topology groups and inhibition rules mined from alert history."""

from vigil.aiops.correlate.alerts import AlertInputError, Firing, firings_from_json, firings_from_prometheus
from vigil.aiops.correlate.mining import MiningResult, PairEvidence, mine, mine_inhibitions
from vigil.aiops.correlate.render import inhibit_rules, render_suggestions
from vigil.aiops.correlate.topology import AlertGroup, group_firings

__all__ = [
    "AlertGroup", "AlertInputError", "Firing", "MiningResult", "PairEvidence", "firings_from_json",
    "firings_from_prometheus", "group_firings", "inhibit_rules", "mine", "mine_inhibitions", "render_suggestions",
]
