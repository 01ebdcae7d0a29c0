"""History from a real Prometheus: backfill with promtool, chunked query_range, train and serve against it.

One Prometheus (the Debian 2.42 binary) is started for the module on a loopback port, on blocks created
by `promtool tsdb create-blocks-from openmetrics` from a file our OpenMetrics writer produced.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import requests
from click.testing import CliRunner

from vigil.aiops.baseline.models import band
from vigil.aiops.baseline.store import load_store
from vigil.aiops.history.openmetrics import write_openmetrics
from vigil.aiops.baseline.train import TrainSettings, history_from_prometheus
from vigil.aiops.history.prometheus import PrometheusReader
from vigil.aiops.history.prometheus_batches import BatchedHistory
from vigil.aiops.history.series import HistoryError
from vigil.common.ports import free_port
from vigil.common.prometheus_api import PrometheusClient, PrometheusUnavailable
from vigil.exporters.sim.load import gpu_load
from vigil.cli import main as vigil_main

pytestmark = pytest.mark.e2e

STEP = 300.0
POINTS = 14 * 288  # 14 days at 5 minutes
NODES, GPUS = ("n1", "n2"), (0, 1)
VIGIL = str(Path(sys.executable).with_name("vigil"))


def wait_http(url: str, timeout: float = 60.0, ok=(200,)) -> requests.Response:
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            last = requests.get(url, timeout=2)
            if last.status_code in ok:
                return last
        except requests.ConnectionError:
            pass
        time.sleep(0.3)
    raise AssertionError(f"{url} not ready in {timeout} s (last: {last and last.status_code})")


def counter_values(n: int) -> np.ndarray:
    """A counter growing 3 per 5 minutes (0.01/s) that restarts every 1,000 samples."""
    return ((np.arange(n) % 1000) + 1) * 3.0


BATCH_LABELS = ({"node": "a"}, {"node": "a", "extra": "b"}, {"node": 'q"uo\\te|.*'})
STALLED = ("n2", 1)  # this GPU's last 15 minutes read 0: the contract rule must catch it


def simulated_utilization(node: str, gpu: int, t: np.ndarray) -> list[float]:
    values = [gpu_load(node, gpu, s) for s in t]
    if (node, gpu) == STALLED:
        values[-3:] = [0.0, 0.0, 0.0]
    return values


@pytest.fixture(scope="module")
def backfilled(tmp_path_factory):
    """(prometheus url, last sample time, port it scrapes `serve` on) with 14 days of simulated GPU load
    and a resetting counter. The last sample is under a minute old, so instant queries see it."""
    work = tmp_path_factory.mktemp("prom")
    end = time.time()
    end -= end % 60
    t = end - STEP * np.arange(POINTS)[::-1]
    series = [
        ("vigil_gpu_utilization_ratio", {"node": n, "gpu": str(g), "uuid": f"GPU-{n}-{g}", "job": "gpu", "instance": f"{n}:9400"},
         t, simulated_utilization(n, g, t))
        for n in NODES
        for g in GPUS
    ]
    series.append(("vigil_test_events_total", {"node": "n1", "job": "node"}, t, counter_values(POINTS)))
    # no label tells these apart, one has a label more than another, one a value PromQL and RE2 must escape
    series += [("vigil_test_batch", labels, t[-48:], np.arange(48.0) + i) for i, labels in enumerate(BATCH_LABELS)]
    om = work / "history.om"
    write_openmetrics(om, series, types={"vigil_test_events_total": "counter"})
    subprocess.run(
        ["promtool", "tsdb", "create-blocks-from", "openmetrics", "--max-block-duration=24h", str(om), str(work / "tsdb")],
        check=True,
        capture_output=True,
    )
    serve_port = free_port()
    (work / "prometheus.yml").write_text(
        "global:\n  scrape_interval: 1s\n"
        f"scrape_configs:\n  - job_name: baseline\n    static_configs:\n      - targets: ['127.0.0.1:{serve_port}']\n"
    )
    port = free_port()
    proc = subprocess.Popen(
        [
            "/usr/bin/prometheus",
            f"--config.file={work / 'prometheus.yml'}",
            f"--storage.tsdb.path={work / 'tsdb'}",
            f"--web.listen-address=127.0.0.1:{port}",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_http(f"{url}/-/ready")
        yield url, end, serve_port
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_chunked_query_range_matches_one_query(backfilled):
    url, end, _ = backfilled
    start = end - 2 * 86_400
    selector = 'vigil_gpu_utilization_ratio{node="n1",gpu="0"}'
    small = PrometheusReader(url, max_points=100)
    assert small.chunk_count(start, end, STEP) == 6  # 577 points in chunks of 100
    chunked = small.query_range(selector, start, end, STEP)
    whole = PrometheusReader(url).query_range(selector, start, end, STEP)
    assert len(chunked) == len(whole) == 1
    assert chunked[0].timestamps.size == 577
    assert np.array_equal(chunked[0].timestamps, whole[0].timestamps)
    assert np.array_equal(chunked[0].values, whole[0].values)
    assert np.all(np.diff(chunked[0].timestamps) == STEP)  # no point queried twice, none lost
    expected = [gpu_load("n1", 0, s) for s in chunked[0].timestamps]
    assert np.allclose(chunked[0].values, expected)

    # the whole selector a batch at a time (3 series, chunked the same way): the same series, in order
    history = BatchedHistory(small, ["vigil_gpu_utilization_ratio"], start, end, STEP, batch_size=3)
    assert history.count == 4 and history.plan[0].label == "uuid"  # one regex over uuid per batch
    batches = list(history.batches())
    assert [len(batch) for batch in batches] == [3, 1]
    assert_same_series([s for batch in batches for s in batch],
                       PrometheusReader(url).query_range("vigil_gpu_utilization_ratio", start, end, STEP))


def assert_same_series(got: list, expected: list) -> None:
    assert [s.key for s in got] == [s.key for s in expected]
    for a, b in zip(got, expected):
        assert np.array_equal(a.timestamps, b.timestamps) and np.array_equal(a.values, b.values), a.describe()
        assert a.is_counter == b.is_counter


def test_prometheus_refuses_more_than_11000_points_and_reader_splits(backfilled):
    url, end, _ = backfilled
    start = end - 13 * 86_400
    with pytest.raises(PrometheusUnavailable, match="11,000"):
        PrometheusClient(url).query_range("vigil_gpu_utilization_ratio", start, end, 60)
    series = PrometheusReader(url).query_range('vigil_gpu_utilization_ratio{node="n2",gpu="1"}', start, end, 60)
    assert series[0].timestamps.size == 13 * 1440 + 1


def test_bad_query_and_unreachable_prometheus_give_the_reason(backfilled):
    url, end, _ = backfilled
    with pytest.raises(HistoryError, match="bad_data.*parse error"):
        PrometheusReader(url).query_range("rate(vigil_gpu_utilization_ratio[5m]", end - 3600, end, STEP)
    with pytest.raises(HistoryError, match="cannot reach Prometheus at http://127.0.0.1:1"):
        PrometheusReader("http://127.0.0.1:1", timeout=2).query_range("up", end - 3600, end, STEP)
    # the same reasons from the batched reading: a query is read (and refused) when iterated,
    # a selector is listed (and refused) at once
    with pytest.raises(HistoryError, match="bad_data.*parse error"):
        list(history_from_prometheus(url, ["rate(vigil_gpu_utilization_ratio[5m]"], TrainSettings(), end=end))
    with pytest.raises(HistoryError, match="cannot reach Prometheus at http://127.0.0.1:1"):
        history_from_prometheus("http://127.0.0.1:1", ["up"], TrainSettings(), end=end)


def test_train_against_backfilled_prometheus_covers_held_out_load(backfilled, tmp_path):
    url, end, _ = backfilled
    result = CliRunner().invoke(
        vigil_main,
        ["aiops", "train", "--prometheus-url", url, "--match", "vigil_gpu_utilization_ratio",
         "--match", "vigil_test_events_total", "--lookback", "14d", "--step", "5m", "--model-dir", str(tmp_path)],
    )
    assert result.exit_code == 0, result.output
    assert "periodic          4" in result.output
    store = load_store(tmp_path)
    entries = {(e["metric"], e["labels"].get("gpu"), e["labels"]["node"]): e for e in store["series"]}
    assert len(entries) == 5
    held_out = end + STEP * np.arange(1, 2 * 288 + 1)  # the next two days, never seen in training
    for node in NODES:
        for gpu in GPUS:
            entry = entries[("vigil_gpu_utilization_ratio", str(gpu), node)]
            assert entry["class"] == "periodic"
            assert entry["labels"]["job"] == "gpu"  # the store keeps the source identity
            actual = np.array([gpu_load(node, gpu, s) for s in held_out])
            _, lower, upper = band(entry["model"], held_out, store["sensitivity"])
            inside = np.mean((actual >= lower) & (actual <= upper))
            assert inside >= 0.95, (node, gpu, inside)
            # a GPU that stalls at 0 for the coming hour is outside the band
            assert np.all(lower[:12] > 0.0)
    counter = entries[("vigil_test_events_total", None, "n1")]
    assert counter["counter_rate"] is True
    expected, lower, _ = band(counter["model"], held_out[:1], 1.0)
    assert expected[0] == pytest.approx(0.01, rel=1e-6)  # resets did not produce negative rates
    assert lower[0] > 0


def test_the_shared_client_reads_instant_vectors_ranges_and_series(backfilled):
    url, end, _ = backfilled
    client = PrometheusClient(url)
    at_end = client.query('vigil_gpu_utilization_ratio{node="n1"}', at=end)
    assert sorted((labels["gpu"], value) for labels, value in at_end) == \
        [(str(g), pytest.approx(gpu_load("n1", g, end))) for g in GPUS]
    ((labels, points),) = client.query_range('vigil_test_events_total', end - 3 * STEP, end, STEP)
    assert labels["node"] == "n1" and [t for t, _ in points] == [end - 3 * STEP, end - 2 * STEP, end - STEP, end]
    found = client.series("vigil_gpu_utilization_ratio", "vigil_test_events_total", start=end - 3600, end=end)
    assert sorted((s["__name__"], s["node"], s.get("gpu")) for s in found) == sorted(
        [("vigil_gpu_utilization_ratio", n, str(g)) for n in NODES for g in GPUS] + [("vigil_test_events_total", "n1", None)])
    assert client.query("vector(1) > 2") == []


@pytest.mark.parametrize("call, reason", [
    (lambda c: c.query("rate(up[5m]"), r"refused 'rate\(up\[5m\]': bad_data: .*parse error"),
    (lambda c: c.query("up[5m]"), "expected an instant vector from 'up\\[5m\\]', got matrix"),
    (lambda c: c.series("{}"), "refused '{}': bad_data"),
])
def test_the_shared_client_says_why_prometheus_refused(backfilled, call, reason):
    url, _, _ = backfilled
    with pytest.raises(PrometheusUnavailable, match=reason):
        call(PrometheusClient(url))


def test_the_shared_client_says_when_prometheus_is_unreachable_or_is_not_prometheus(backfilled):
    url, _, _ = backfilled
    with pytest.raises(PrometheusUnavailable, match="cannot reach Prometheus at http://127.0.0.1:1"):
        PrometheusClient("http://127.0.0.1:1", timeout=2).query("up")
    with pytest.raises(PrometheusUnavailable, match="HTTP 404 with a non-JSON body"):
        PrometheusClient(f"{url}/nothing-here").query("up")


def instant(url: str, query: str) -> list[tuple[dict, float]]:
    return PrometheusClient(url, timeout=5).query(query)


def test_serve_trains_at_start_refits_and_the_contract_rule_joins_in_prometheus(backfilled, tmp_path):
    url, _, port = backfilled
    proc = subprocess.Popen(
        [VIGIL, "aiops", "serve", "--listen", f"127.0.0.1:{port}", "--model-dir", str(tmp_path / "models"),
         "--prometheus-url", url, "--match", "vigil_gpu_utilization_ratio", "--refit-interval", "3s"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        wait_http(f"http://127.0.0.1:{port}/healthz", timeout=90)
        text = requests.get(f"http://127.0.0.1:{port}/metrics", timeout=5).text
        line = next(l for l in text.splitlines() if l.startswith('vigil_baseline_lower{gpu="1"') and 'node="n2"' in l)
        assert 'metric="vigil_gpu_utilization_ratio"' in line and "job=" not in line and "instance=" not in line
        assert "vigil_baseline_series 4.0" in text
        assert 'vigil_baseline_series_by_class{class="periodic"} 4.0' in text
        check = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True, text=True)
        assert check.returncode == 0, check.stdout + check.stderr
        assert json.loads((tmp_path / "models" / "baselines.json").read_text())["source"] == url

        # the documented rule, evaluated by Prometheus on what it scraped from serve: only the stalled GPU
        rule = ('vigil_gpu_utilization_ratio < on(node, gpu) group_left '
                'vigil_baseline_lower{metric="vigil_gpu_utilization_ratio"}')
        deadline = time.monotonic() + 30
        while not instant(url, 'vigil_baseline_lower{metric="vigil_gpu_utilization_ratio"}'):
            assert time.monotonic() < deadline, "Prometheus never scraped serve"
            time.sleep(0.5)
        fired = instant(url, rule)
        assert [(labels["node"], labels["gpu"]) for labels, _ in fired] == [("n2", "1")]

        # refits on the schedule: a new generation of the store and a newer fit time
        first = json.loads((tmp_path / "models" / "baselines.json").read_text())["generation"]
        deadline = time.monotonic() + 30
        while json.loads((tmp_path / "models" / "baselines.json").read_text())["generation"] == first:
            assert time.monotonic() < deadline, "no refit within 30 s at a 3 s interval"
            time.sleep(0.5)
    finally:
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 0, out
    assert "Traceback" not in out and "refit" in out
