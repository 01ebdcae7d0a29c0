"""Reading a fleet from a real Prometheus a batch at a time: exact batches, long queries POSTed, the
same models as one whole-selector query, a selector matching nothing, a query that cannot be listed.

The Prometheus and its backfilled history are those of tests/test_aiops_history_prometheus.py (the
fixture is imported: this module starts its own Prometheus on the same kind of blocks).
"""

from __future__ import annotations

import pytest
from click.testing import CliRunner

import test_aiops_history_prometheus as history_e2e
from test_aiops_history_prometheus import BATCH_LABELS, STEP, assert_same_series
from vigil.aiops.baseline.train import TrainSettings, history_from_prometheus, history_window, train
from vigil.aiops.history.prometheus import PrometheusReader
from vigil.aiops.history.prometheus_batches import BatchedHistory
from vigil.cli import main as vigil_main

pytestmark = pytest.mark.e2e
backfilled = history_e2e.backfilled  # the fixture, for this module


def test_series_no_label_tells_apart_are_read_exactly_one_by_one(backfilled):
    url, end, _ = backfilled
    start = end - 86_400
    history = BatchedHistory(PrometheusReader(url), ["vigil_test_batch"], start, end, STEP, batch_size=1)
    assert history.count == 3 and history.plan[0].label is None
    batches = list(history.batches())
    assert [len(batch) for batch in batches] == [1, 1, 1]  # {node="a"} also matches {node="a",extra="b"}: dropped
    whole = PrometheusReader(url).query_range("vigil_test_batch", start, end, STEP)
    assert sorted(s.labels["node"] for s in whole) == sorted(labels["node"] for labels in BATCH_LABELS)
    assert_same_series([s for batch in batches for s in batch], whole)


def test_a_batch_query_too_long_for_a_url_is_posted(backfilled):
    url, end, _ = backfilled
    start = end - 86_400
    reader = PrometheusReader(url)
    reader.client.max_url_query = 50
    methods = []
    reader.client.session.hooks["response"].append(lambda response, **_: methods.append(response.request.method))
    got = list(BatchedHistory(reader, ["vigil_gpu_utilization_ratio", "vigil_test_batch"], start, end, STEP))
    assert methods == ["POST"] * 4  # two listings, then one batch of each selector's series
    expected = [*PrometheusReader(url).query_range("vigil_gpu_utilization_ratio", start, end, STEP),
                *PrometheusReader(url).query_range("vigil_test_batch", start, end, STEP)]
    assert_same_series(got, expected)


def test_training_streamed_in_batches_gives_the_models_of_one_whole_query(backfilled):
    url, end, _ = backfilled
    settings = TrainSettings()
    selectors = ["vigil_gpu_utilization_ratio", "vigil_test_events_total"]
    start, stop = history_window(settings, end)
    reader = PrometheusReader(url)
    whole = train([s for selector in selectors for s in reader.query_range(selector, start, stop, STEP)], settings)
    streamed = history_from_prometheus(url, selectors, settings, end=end, batch_size=3)
    assert streamed.count == 5
    result = train(streamed, settings)
    assert len(result.entries) == 5 and result.entries == whole.entries and result.skipped == whole.skipped


def test_a_selector_matching_nothing_lists_no_series_and_train_says_so(backfilled, tmp_path):
    url, end, _ = backfilled
    history = history_from_prometheus(url, ["vigil_nothing_here"], TrainSettings(), end=end)
    assert history.count == 0 and list(history) == []
    result = CliRunner().invoke(vigil_main, ["aiops", "train", "--prometheus-url", url, "--match", "vigil_nothing_here",
                                             "--model-dir", str(tmp_path)])
    assert result.exit_code == 1 and f"no series found in {url} for vigil_nothing_here" in result.output
    assert not (tmp_path / "baselines.json").exists()


def test_a_query_that_is_not_a_plain_selector_is_read_whole(backfilled):
    url, end, _ = backfilled
    settings = TrainSettings(lookback=86_400)
    query = "rate(vigil_test_events_total[15m])"
    history = history_from_prometheus(url, [query], settings, end=end)
    assert history.count is None
    start, stop = history_window(settings, end)
    assert_same_series(list(history), PrometheusReader(url).query_range(query, start, stop, STEP))
