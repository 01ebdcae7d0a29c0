"""Recording rules of the specs inlined into the alerts that read them, so a recording rule that was never
deployed is backtested too; reads that cannot be inlined stay on the server's recorded history."""

from __future__ import annotations

from typing import NamedTuple

import pytest

from vigil.rules.backtest_records import inline_records
from vigil.rules.query import parse


class Rec(NamedTuple):
    name: str
    expr: str
    labels: tuple[tuple[str, str], ...] = ()


AVG = Rec("node:gpu_util:avg", "avg by (node) (vigil_gpu_utilization_ratio)")
SUM = Rec("job:gpu_util:sum", "sum(node:gpu_util:avg)", (("source", "rec"),))
PLAIN = Rec("gpu_busy", "vigil_gpu_utilization_ratio > 0.5")


@pytest.mark.parametrize("expr, inlined, from_history", [
    ("node:gpu_util:avg < 0.2", "(avg by (node) (vigil_gpu_utilization_ratio)) < 0.2", []),
    ("min by (node) (node:gpu_util:avg) < 0.2", "min by (node) ((avg by (node) (vigil_gpu_utilization_ratio))) < 0.2", []),
    # a recording rule reading another, and the recording rule's labels
    ("job:gpu_util:sum > 1", 'label_replace((sum((avg by (node) (vigil_gpu_utilization_ratio)))), "source", "rec", "", "") > 1', []),
    # matchers, ranges and offsets read what the server recorded
    ('node:gpu_util:avg{node="a"} > 0', 'node:gpu_util:avg{node="a"} > 0', ["node:gpu_util:avg"]),
    ("deriv(node:gpu_util:avg[10m]) > 0", "deriv(node:gpu_util:avg[10m]) > 0", ["node:gpu_util:avg"]),
    ("node:gpu_util:avg offset 5m > 0", "node:gpu_util:avg offset 5m > 0", ["node:gpu_util:avg"]),
    # a name in a string is no read; a name without a colon is never substituted
    ('label_replace(up, "x", "node:gpu_util:avg", "", "") == 0', 'label_replace(up, "x", "node:gpu_util:avg", "", "") == 0', []),
    ("gpu_busy == 1", "gpu_busy == 1", ["gpu_busy"]),
])
def test_instant_reads_of_colon_named_records_are_inlined(expr, inlined, from_history):
    assert inline_records(expr, [AVG, SUM, PLAIN]) == (inlined, from_history)
    parse(inlined)  # still valid PromQL


def test_a_cycle_of_recording_rules_stops_at_the_depth_limit_and_stays_on_history():
    a, b = Rec("a:x:sum", "sum(b:x:sum)"), Rec("b:x:sum", "sum(a:x:sum)")
    inlined, from_history = inline_records("a:x:sum > 0", [a, b])
    assert from_history and parse(inlined)


def test_a_record_label_value_with_quotes_and_a_newline_is_inlined_as_a_valid_string():
    record = Rec("q:x:sum", "sum(up)", (("note", 'say "hi"\nthen \\ go'),))
    inlined, from_history = inline_records("q:x:sum > 0", [record])
    assert from_history == [] and inlined == r'label_replace((sum(up)), "note", "say \"hi\"\nthen \\ go", "", "") > 0'
    parse(inlined)
