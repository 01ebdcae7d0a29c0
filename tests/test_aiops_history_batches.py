"""Reading a listed fleet a batch at a time, without a Prometheus: the selectors each batch is read with,
the batch sizes and order, and that a consumer holds one batch at most. Against a real Prometheus:
tests/test_aiops_history_prometheus.py."""

from __future__ import annotations

import re
import weakref

import numpy as np
import pytest

from vigil.aiops.history.prometheus_batches import UNION_BATCH_SERIES, BatchedHistory
from vigil.aiops.history.promql_selectors import (
    alternation_selector,
    exact_selector,
    identifying_label,
    selector_matchers,
    series_key,
)
from vigil.aiops.history.series import Series

GPU = "vigil_gpu_utilization_ratio"


def gpu_key(node: int, gpu: int, uuid: bool = True) -> tuple:
    labels = {"__name__": GPU, "node": f"n{node}", "gpu": str(gpu), "job": "gpu"}
    if uuid:
        labels["uuid"] = f"GPU-{node:03d}-{gpu}"
    return series_key(labels)


class FakeReader:
    """A PrometheusReader whose listing is `keys` and whose query_range answers the kept keys; it
    records the queries and keeps weak references to every series it hands out."""

    def __init__(self, keys):
        self.keys, self.queries, self.handed = keys, [], []

    def list_series(self, selector, start, end):
        return sorted(self.keys)

    def query_range(self, query, start, end, step, keep=None):
        self.queries.append(query)
        out = []
        for key in sorted(keep if keep is not None else self.keys):
            labels = dict(key)
            name = labels.pop("__name__")
            series = Series(name, labels, np.arange(3.0), np.ones(3))
            self.handed.append(weakref.ref(series))
            out.append(series)
        return out


def test_a_fleet_with_an_identifying_label_is_read_in_batches_of_one_alternation():
    keys = [gpu_key(n, g) for n in range(10) for g in range(8)]
    reader = FakeReader(keys)
    history = BatchedHistory(reader, [GPU], 0.0, 3600.0, 300.0, batch_size=32)
    assert history.count == 80 and history.plan[0].label == "uuid"
    assert [len(batch) for batch in history.batches()] == [32, 32, 16]
    assert all(q.startswith('{__name__="vigil_gpu_utilization_ratio",uuid=~"') and " or " not in q for q in reader.queries)
    assert [s.key for s in history] == [(GPU, tuple((k, v) for k, v in key if k != "__name__")) for key in sorted(keys)]


def test_series_no_label_tells_apart_are_read_in_small_unions_of_exact_selectors():
    keys = [gpu_key(n, g, uuid=False) for n in range(3) for g in range(8)]
    reader = FakeReader(keys)
    history = BatchedHistory(reader, [GPU], 0.0, 3600.0, 300.0)
    assert history.plan[0].label is None
    assert [len(batch) for batch in history.batches()] == [UNION_BATCH_SERIES] * 3
    assert reader.queries[0] == " or ".join(exact_selector(key) for key in sorted(keys)[:UNION_BATCH_SERIES])


def test_the_consumer_holds_one_batch_at_most():
    # reference counting frees a series as soon as nothing holds it (a Series makes no cycles)
    reader = FakeReader([gpu_key(n, g) for n in range(4) for g in range(8)])
    alive_at_each_series = []
    for _ in BatchedHistory(reader, [GPU], 0.0, 3600.0, 300.0, batch_size=4):
        alive_at_each_series.append(sum(ref() is not None for ref in reader.handed))
    assert len(alive_at_each_series) == 32 and max(alive_at_each_series) <= 4


def test_queries_are_read_whole_and_not_counted():
    reader = FakeReader([gpu_key(1, 0)])
    history = BatchedHistory(reader, [f"rate({GPU}[5m])", GPU], 0.0, 3600.0, 300.0)
    assert history.count is None and [listed.keys is None for listed in history.plan] == [True, False]
    assert len(list(history)) == 2 and reader.queries[0] == f"rate({GPU}[5m])"


def test_a_selector_matching_nothing_gives_no_series_and_no_query():
    reader = FakeReader([])
    history = BatchedHistory(reader, ["vigil_nothing_here"], 0.0, 3600.0, 300.0)
    assert history.count == 0 and list(history) == [] and reader.queries == []


@pytest.mark.parametrize("text, matchers", [
    (GPU, [f'__name__="{GPU}"']),
    ('up{job="a\\"b", instance=~"n.*"}', ['__name__="up"', 'job="a\\"b"', 'instance=~"n.*"']),
    ('{__name__=~"x|y", a!="", b!~"c"}', ['__name__=~"x|y"', 'a!=""', 'b!~"c"']),
    ("rate(up[5m])", None), ("up[5m]", None), ("up offset 1h", None), ("up @ 100", None), ("a or b", None),
    ("rate(up[5m]", None),
])
def test_only_plain_selectors_are_listed(text, matchers):
    assert selector_matchers(text) == matchers


def test_selectors_quote_and_escape_values_as_promql_and_re2_read_them():
    odd = series_key({"__name__": "x", "node": 'q"uo\\te', "id": "a.b|c*"})
    assert exact_selector(odd) == 'x{id="a.b|c*",node="q\\"uo\\\\te"}'
    assert exact_selector(series_key({"__name__": "x.y", "a": "1"})) == '{__name__="x.y",a="1"}'
    query = alternation_selector(['__name__="x"'], "id", [odd, series_key({"__name__": "x", "id": "(d)"})])
    assert query == '{__name__="x",id=~"\\\\(d\\\\)|a\\\\.b\\\\|c\\\\*"}'
    # what Prometheus gets once the PromQL string is read: a regex matching exactly the two values
    regex = query.split('=~"', 1)[1][:-2].replace("\\\\", "\\")
    assert [v for v in ("(d)", "a.b|c*", "a.b", "d", "axb|c*") if re.fullmatch(regex, v)] == ["(d)", "a.b|c*"]


def test_the_identifying_label_is_one_every_series_has_with_a_different_value():
    keys = [series_key({"__name__": "x", "node": f"n{i // 2}", "gpu": str(i % 2), "uuid": f"u{i}", "id": f"{i}"})
            for i in range(4)]
    assert identifying_label(keys) == "id"  # the shortest of the unique ones
    assert identifying_label(keys + [series_key({"__name__": "x", "node": "n9", "gpu": "0"})]) is None
    assert identifying_label([]) is None
