"""The label arithmetic the lint relies on (`rules.query.read_query`) agrees with Prometheus itself:
each expression's inferred result labels are checked by `promtool test rules` on real series."""

from __future__ import annotations

import subprocess

import pytest
import yaml

from vigil.rules.promtool import find_promtool
from vigil.rules.query import QuerySyntaxError, read_query

SERIES = {  # metric -> labels of its one input series
    "gpu_temp": {"node": "n1", "gpu": "0", "uuid": "u0", "job": "vigil-gpu"},
    "node_gpus": {"node": "n1", "job": "vigil-gpu"},
    "errors_total": {"node": "n1", "gpu": "0", "job": "vigil-gpu", "code": "500"},
}
LABELS = {name: frozenset(labels) for name, labels in SERIES.items()}
VALUES = {"gpu_temp": "90x20", "node_gpus": "8x20", "errors_total": "0+60x20"}

CASES = [
    ("gpu_temp > 80", {"node", "gpu", "uuid", "job"}),
    ("gpu_temp > on (node) node_gpus", {"node"}),  # one-to-one with on(): only those labels survive
    ("gpu_temp - ignoring (gpu, uuid) node_gpus", {"node", "job"}),
    ("gpu_temp > on (node) group_left (job) node_gpus", {"node", "gpu", "uuid", "job"}),
    ("gpu_temp unless on (node) node_gpus == 0", {"node", "gpu", "uuid", "job"}),
    ("max by (node) (gpu_temp) > 80", {"node"}),
    ("max without (gpu, uuid) (gpu_temp)", {"node", "job"}),
    ("sum(rate(errors_total[5m])) >= 0", set()),
    ("topk(1, gpu_temp)", {"node", "gpu", "uuid", "job"}),
    ('label_replace(node_gpus, "host", "$1", "node", "(.*)")', {"node", "job", "host"}),
    ('absent(nothing{job="x", node=~"n.*"})', {"job"}),
    ("time() - gpu_temp > 0", {"node", "gpu", "uuid", "job"}),
    ("holt_winters(gpu_temp[5m], 0.5, 0.5)", {"node", "gpu", "uuid", "job"}),  # in 2.42, gone from the parser
]


@pytest.mark.parametrize("expr, expected", CASES)
def test_inferred_labels(expr, expected):
    assert read_query(expr, LABELS.get).output == frozenset(expected)


def test_prometheus_agrees_with_the_inferred_labels(tmp_path):
    """One recording rule per case; promtool checks each result's labels are exactly the inferred ones."""
    records = [f"case_{i}" for i in range(len(CASES))]
    (tmp_path / "rules.yml").write_text(yaml.safe_dump({"groups": [{"name": "cases", "rules": [
        {"record": record, "expr": expr} for record, (expr, _) in zip(records, CASES)]}]}))
    tests = [{"expr": record, "eval_time": "10m", "exp_samples": [{
        "labels": record + "{" + ", ".join(f'{name}="{_value(name, expr)}"' for name in sorted(expected)) + "}",
        "value": _value_of(expr)}]} for record, (expr, expected) in zip(records, CASES)]
    inputs = [{"series": name + "{" + ", ".join(f'{k}="{v}"' for k, v in labels.items()) + "}",
               "values": VALUES[name]} for name, labels in SERIES.items()]
    (tmp_path / "test.yml").write_text(yaml.safe_dump({"rule_files": ["rules.yml"], "evaluation_interval": "1m",
                                                       "tests": [{"interval": "1m", "input_series": inputs,
                                                                  "promql_expr_test": tests}]}))
    result = subprocess.run([find_promtool(), "test", "rules", "test.yml"], cwd=tmp_path, capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr


def _value(label: str, expr: str) -> str:
    if expr.startswith("absent("):
        return "x"  # absent() takes its labels from the selector's equality matchers
    return {"host": "n1"}.get(label) or next(v for labels in SERIES.values() for k, v in labels.items() if k == label)


def _value_of(expr: str) -> float:
    values = {"gpu_temp - ignoring (gpu, uuid) node_gpus": 82, "sum(rate(errors_total[5m])) >= 0": 1,
              'label_replace(node_gpus, "host", "$1", "node", "(.*)")': 8, 'absent(nothing{job="x", node=~"n.*"})': 1,
              "time() - gpu_temp > 0": 510}
    return values.get(expr, 90)


def test_syntax_errors_carry_the_parsers_message():
    with pytest.raises(QuerySyntaxError, match="unclosed left parenthesis"):
        read_query("sum(rate(x[5m])", LABELS.get)
    with pytest.raises(QuerySyntaxError, match="5q"):
        read_query("rate(x[5q])", LABELS.get)
