"""The steady-state history of the rule benchmark (`bench/rules/run.py --steady`, `bench/rules/steady.py`):
what promtool writes is what a Prometheus reads back, and the live simulated fleet goes on with the very
series the history ends with."""

import time

import pytest
import requests
from bench_support import load_bench
from prometheus_client.parser import text_string_to_metric_families

from vigil.exporters.sim.identity import device_uuid
from vigil.stack.tsdb_readback import prometheus_on

steady = load_bench("rules/steady.py")
stack = load_bench("rules/stack.py")
NODES, GPUS = 2, 8


def test_xid_events_are_drawn_at_the_rate_asked_and_each_counter_counts_its_own():
    counters = steady.xid_counters(nodes=250, gpus=8, days=7, rate=5.0, end=1_800_000_000.0)
    events = sum(len(c.events) for c in counters)
    assert 70 * 0.7 < events < 70 * 1.3  # 5 a 1,000 GPU-days x 2,000 GPUs x 7 days
    assert len({(c.node, c.gpu, c.xid) for c in counters}) == len(counters)
    assert all(1_800_000_000.0 - 7 * 86400 <= t < 1_800_000_000.0 for c in counters for t in c.events)
    assert {c.xid for c in counters} <= set(steady.XIDS) and 79 not in steady.XIDS


def test_history_rows_count_each_event_from_its_minute_on():
    end = 1_800_000_000.0
    counter = steady.Counter(node=1, gpu=3, xid=48, events=(end - 3000.0, end - 1210.0))
    rows = steady.history_rows([counter], fleet_gpus=16, days=1, end=end, slo_labels={"slo:x:count": {"slo": "x"}})
    by_name = {name: (labels, t, v) for name, labels, t, v in rows}
    labels, t, values = by_name["vigil_gpu_xid_errors_total"]
    assert labels == {"job": "vigil-gpu", "instance": "node-1", "node": "node-1", "gpu": "3",
                      "uuid": device_uuid("node-1", 3), "xid": "48", "class": "critical"}
    assert [values[t == end - s][0] for s in (2940, 1200, 0)] == [1, 2, 2]
    assert all(v != v for v in values[t < end - 3000])  # no series before its first event (NaN: no sample)
    _, _, last = by_name["vigil_gpu_xid_last_seen_timestamp_seconds"]
    assert last[t == end - 1200][0] == end - 1210.0
    assert set(by_name["slo:x:count"][2]) == {16.0}


@pytest.fixture(scope="module")
def rules_file(tmp_path_factory):
    return stack.generate_rules(tmp_path_factory.mktemp("rules"))


def test_the_backfilled_week_reads_back_and_the_live_fleet_carries_each_counter_on(tmp_path, rules_file):
    end = (time.time() // 60) * 60 - 600  # where the blocks lie: inside the reader's retention
    counters = steady.xid_counters(NODES, GPUS, days=1, rate=600.0, end=end)
    assert len(counters) >= 4
    figures = steady.backfill(tmp_path, rules_file, counters, NODES * GPUS, days=1, end=end)
    assert figures["counters"] == len(counters) and figures["samples"] > 0
    scratch = tmp_path / "check"
    scratch.mkdir()
    with prometheus_on(tmp_path / "data", scratch) as reader:
        def at_end(query: str) -> list[dict]:
            reply = requests.get(f"{reader.url}/api/v1/query", params={"query": query, "time": end}, timeout=30)
            return reply.json()["data"]["result"]

        counted = {(r["metric"]["node"], r["metric"]["gpu"], r["metric"]["xid"]): float(r["value"][1])
                   for r in at_end("vigil_gpu_xid_errors_total")}
        assert counted == {(f"node-{c.node}", str(c.gpu), str(c.xid)): len(c.events) for c in counters}
        occasions = at_end("count_over_time(gpu:vigil_gpu_hardware_xid:occasion[1d])")
        assert {(r["metric"]["node"], r["metric"]["gpu"]) for r in occasions} == \
            {(f"node-{c.node}", str(c.gpu)) for c in counters}
        assert [float(r["value"][1]) for r in at_end("slo:gpu_availability_up:count")] == [NODES * GPUS]

    control = stack.free_port()
    with stack.fleet(NODES, GPUS, 120, tmp_path, control) as (_, port):
        steady.carry_on(f"http://127.0.0.1:{control}", counters)
        expected = {(f"node-{c.node}", str(c.gpu), device_uuid(f"node-{c.node}", c.gpu), str(c.xid)): len(c.events)
                    for c in counters}
        stack.wait_until(lambda: live_counters(port) == expected, 60, "the fleet's XID counters")


def live_counters(port: int) -> dict:
    found = {}
    for node in range(1, NODES + 1):
        text = requests.get(f"http://127.0.0.1:{port}/metrics?node=node-{node}", timeout=10).text
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                if sample.name == "vigil_gpu_xid_errors_total":
                    labels = sample.labels
                    found[(labels["node"], labels["gpu"], labels["uuid"], labels["xid"])] = sample.value
    return found
