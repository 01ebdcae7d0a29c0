"""The pure parts of the postmortem's metric evidence: which expression a chart draws and with which
threshold, which series belong to the incident, and the window the range queries cover."""

from __future__ import annotations

import pytest

from vigil import rules
from vigil.notifier.postmortem.evidence import (AFTER_S, BASELINE, LOOKBACK_S, inlined, matches, split_threshold,
                                                window)

_RULESET = rules.load_specs(rules.default_spec_paths())
_RECORDS = [record for group in _RULESET.groups for record in group.records]
# each shipped alert as the postmortem looks at it: the recorded series it reads replaced by their expressions
SHIPPED = {alert.name: inlined(alert.expr, _RECORDS) for alert in _RULESET.alerts}


@pytest.mark.parametrize("expr, expected", [
    ('vigil_gpu_temperature_celsius{sensor="gpu"} >= 90', ('vigil_gpu_temperature_celsius{sensor="gpu"}', ">=", 90.0)),
    ("(rate(x_total[5m]) > 0.5) and on (node) up == 1", ("rate(x_total[5m])", ">", 0.5)),
    ("vigil_gpu_up == 0 unless on (node, gpu) vigil_gpu_collection_stalled == 1", ("vigil_gpu_up", "==", 0.0)),
    ("vigil_node_gpus_visible < vigil_node_gpus_expected", None),  # compares two series: no number to draw
    ("absent(up{job='x'})", None),
    ("this is not promql (", None),
])
def test_the_threshold_is_the_number_the_alert_compares_with(expr, expected):
    assert split_threshold(expr) == expected


def test_the_shipped_overheat_and_baseline_alerts_chart_their_metric():
    assert split_threshold(SHIPPED["GpuOverheating"])[1:] == (">=", 90.0)
    assert BASELINE.search(SHIPPED["GpuLoadOutsideBaseline"]).group(1) == "vigil_gpu_utilization_ratio"


def test_series_belong_to_the_alerts_node_and_gpu():
    gpu_alert, node_alert = [{"node": "n1", "gpu": "2"}], [{"node": "n1"}]
    assert matches({"node": "n1", "gpu": "2", "instance": "a"}, gpu_alert)
    assert not matches({"node": "n1", "gpu": "3"}, gpu_alert)
    assert matches({"node": "n1"}, gpu_alert)  # a node-level series of the GPU's node
    assert matches({"node": "n1", "gpu": "3"}, node_alert)  # every GPU of a node alert's node
    assert not matches({"node": "n2", "gpu": "2"}, gpu_alert)
    assert not matches({"job": "x"}, gpu_alert)  # names no node or GPU: not the incident's


def test_the_window_spans_the_first_alert_to_after_the_resolution():
    incident = {"opened_at": "2027-01-15T08:00:00.000Z", "resolved_at": "2027-01-15T08:30:00.000Z",
                "alerts": [{"startsAt": "2027-01-15T07:59:00.5Z"}, {"startsAt": "0001-01-01T00:00:00Z"}]}
    t0 = 1_800_000_000.0
    start, end, step = window(incident, now=t0 + 86400)
    assert (start, end) == (t0 - 59.5 - LOOKBACK_S, t0 + 1800 + AFTER_S) and step == 5
    assert window({**incident, "resolved_at": None}, now=t0 + 60)[1] == t0 + 60  # open: up to now
