"""GPU failure risk: scoring from precursors, and the collector against a Prometheus-like HTTP API."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

import pytest
from prometheus_client import CollectorRegistry

from vigil.aiops.risk import risk_collectors
from vigil.aiops.risk.collector import FailureRiskCollector
from vigil.aiops.risk import gpu_score
from vigil.aiops.risk.gpu_score import GpuSignals, score_gpus
from vigil.aiops.risk.gpu_signals import GPU_INVENTORY_QUERY, GPU_QUERIES
from vigil.common.prometheus_api import PrometheusClient


def _node(name: str, temps: list[float]) -> list[GpuSignals]:
    return [GpuSignals(node=name, gpu=str(i), temperature_c=t) for i, t in enumerate(temps)]


def test_gpu_with_field_note_precursors_ranks_above_its_healthy_peers():
    gpus = _node("n1", [61, 62, 60, 61, 63, 62, 61, 60])
    sick = gpus[5]
    sick.corrected_ecc_per_hour, sick.remap_pending, sick.xid_92_94_count = 40.0, 1.0, 3.0
    sick.temperature_c = 71
    risks = {r.gpu: r for r in score_gpus(gpus)}
    ranked = sorted(risks.values(), key=lambda r: r.risk, reverse=True)
    assert ranked[0].gpu == "5"
    assert ranked[0].risk > 0.5 > ranked[1].risk
    assert ranked[0].contributions["temperature_above_peers"] > 0
    assert ranked[0].top_reason in {"corrected_ecc_rate", "xid_92_94", "remap_pending", "temperature_above_peers"}
    assert all(r.top_reason == "none" for r in ranked[1:] if r.contributions["temperature_above_peers"] == 0)


@pytest.mark.parametrize(
    "field,value",
    [("corrected_ecc_per_hour", 20.0), ("remap_pending", 1.0), ("remap_failure", 1.0),
     ("xid_92_94_count", 2.0), ("recovery_action", 1.0)],
)
def test_each_precursor_alone_raises_the_risk(field, value):
    gpus = _node("n1", [60, 60, 60, 60])
    setattr(gpus[2], field, value)
    risks = score_gpus(gpus)
    # calibrated weights: a recovery action alone (healthy GPUs have them too, until the next reset)
    # raises the risk about 1.7 times, a pending remap 2.4 times; the others far more
    assert risks[2].risk > 1.5 * risks[0].risk
    assert risks[0].risk == risks[1].risk == risks[3].risk


def test_a_hot_node_where_all_gpus_are_equally_hot_flags_none():
    hot = _node("hot", [88, 88, 89, 88, 88, 89, 88, 88])
    cool_with_one_hot = _node("mixed", [60, 61, 60, 60, 79, 61, 60, 60])
    risks = score_gpus(hot + cool_with_one_hot)
    hot_risks = [r for r in risks if r.node == "hot"]
    assert all(r.contributions["temperature_above_peers"] == 0 for r in hot_risks if r.gpu in {"0", "1", "3"})
    assert max(r.risk for r in hot_risks) < 0.02
    mixed = {r.gpu: r for r in risks if r.node == "mixed"}
    assert mixed["4"].top_reason == "temperature_above_peers"
    assert mixed["4"].risk > 5 * max(r.risk for r in hot_risks)


class _FakePrometheus(BaseHTTPRequestHandler):
    """Answers like the Prometheus API: /api/v1/query from `server.answers` (PromQL -> [(labels,
    value)]) and /api/v1/query_range from `server.ranges` (PromQL -> [(labels, [value per step])])."""

    def do_GET(self):  # noqa: N802 - http.server API
        url = urlparse(self.path)
        params = {k: v[0] for k, v in parse_qs(url.query).items()}
        query = params.get("query", "")
        self.server.seen.append(query)
        if url.path == "/api/v1/query":
            result = [{"metric": labels, "value": [1700000000, str(v)]} for labels, v in self.server.answers.get(query, [])]
            data = {"resultType": "vector", "result": result}
        elif url.path == "/api/v1/query_range":
            start, end, step = float(params["start"]), float(params["end"]), float(params["step"])
            result = []
            for labels, values in self.server.ranges.get(query, []):
                times = [end - step * i for i in range(len(values))][::-1]  # the last value is at `end`
                result.append({"metric": labels, "values": [[t, str(v)] for t, v in zip(times, values) if t >= start]})
            data = {"resultType": "matrix", "result": result}
        else:
            self.send_response(404)
            self.end_headers()
            return
        body = json.dumps({"status": "success", "data": data}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def fake_prometheus():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _FakePrometheus)
    server.answers, server.ranges, server.seen = {}, {}, []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def _gpu(node, gpu):
    return {"node": node, "gpu": gpu}


def test_collector_exports_gpu_risk_and_reasons_from_the_prometheus_api(fake_prometheus, tmp_path):
    fake_prometheus.answers = {
        GPU_INVENTORY_QUERY: [(_gpu("n1", "0"), 1), (_gpu("n1", "1"), 1), (_gpu("n1", "2"), 1)],
        GPU_QUERIES["remap_failure"]: [(_gpu("n1", "1"), 1)],
        GPU_QUERIES["xid_92_94_count"].replace("{xid_window}", "7d"): [(_gpu("n1", "1"), 4)],
        GPU_QUERIES["temperature_c"]: [(_gpu("n1", "0"), 60), (_gpu("n1", "1"), 61), (_gpu("n1", "2"), 60)],
    }
    url = f"http://127.0.0.1:{fake_prometheus.server_address[1]}"
    collector = FailureRiskCollector(PrometheusClient(url), tmp_path)
    registry = CollectorRegistry()
    registry.register(collector)
    assert registry.get_sample_value("vigil_failure_risk_up") == 0  # nothing before the first refresh
    assert collector.refresh()
    value = lambda gpu: registry.get_sample_value("vigil_failure_risk", {"kind": "gpu", "node": "n1", "gpu": gpu})
    assert value("1") > 0.5 > value("0") == value("2")
    reason = registry.get_sample_value(
        "vigil_failure_risk_reason", {"kind": "gpu", "node": "n1", "gpu": "1", "reason": "remap_failure"}
    )
    assert reason == pytest.approx(gpu_score.WEIGHTS["remap_failure"])  # one unit of the signal: its weight
    assert registry.get_sample_value("vigil_failure_risk_up") == 1
    # no disk model in the model dir: no disk series, and no SMART query at all
    assert not any("smart" in q for q in fake_prometheus.seen)
    scrapes_before = len(fake_prometheus.seen)
    registry.collect().__next__()  # a scrape never queries Prometheus
    list(registry.collect())
    assert len(fake_prometheus.seen) == scrapes_before


def test_unreachable_prometheus_is_logged_and_keeps_the_last_snapshot(fake_prometheus, tmp_path, caplog):
    fake_prometheus.answers = {GPU_INVENTORY_QUERY: [(_gpu("n1", "0"), 1)]}
    port = fake_prometheus.server_address[1]
    collector = FailureRiskCollector(PrometheusClient(f"http://127.0.0.1:{port}", timeout=2), tmp_path)
    registry = CollectorRegistry()
    registry.register(collector)
    assert collector.refresh()
    fake_prometheus.shutdown()
    fake_prometheus.server_close()
    assert not collector.refresh()
    assert "cannot reach Prometheus" in caplog.text
    assert registry.get_sample_value("vigil_failure_risk_up") == 0
    assert registry.get_sample_value("vigil_failure_risk", {"kind": "gpu", "node": "n1", "gpu": "0"}) is not None


def test_risk_collectors_contract(fake_prometheus, tmp_path):
    assert risk_collectors(tmp_path, None) == []
    url = f"http://127.0.0.1:{fake_prometheus.server_address[1]}"
    fake_prometheus.answers = {GPU_INVENTORY_QUERY: [(_gpu("n9", "3"), 1)]}
    collectors = risk_collectors(tmp_path, url, interval_s=0.05)
    try:
        registry = CollectorRegistry()
        for c in collectors:
            registry.register(c)
        for _ in range(100):  # the background thread refreshes on its own
            if registry.get_sample_value("vigil_failure_risk_up") == 1:
                break
            threading.Event().wait(0.05)
        assert registry.get_sample_value("vigil_failure_risk", {"kind": "gpu", "node": "n9", "gpu": "3"}) > 0
    finally:
        for c in collectors:
            c.stop()


def _smart(node, device, attr):
    return {"node": node, "device": device, "attribute_id": str(attr), "attribute": f"a{attr}"}


def test_collector_exports_disk_risk_when_a_disk_model_is_trained(fake_prometheus, tmp_path):
    from vigil.aiops.disk.model import save_model, train_disk_model
    from vigil.aiops.disk.simulate import FleetSpec, simulate_fleet
    from vigil.aiops.risk.disk_signals import SMART_DAILY_QUERY

    model, _ = train_disk_model(simulate_fleet(FleetSpec(disks=800, days=90, seed=3)))
    save_model(model, tmp_path)
    days = 15
    fake_prometheus.ranges = {
        SMART_DAILY_QUERY: [
            # sda: reallocated sectors accelerating over the last two weeks, pending sectors appearing
            (_smart("n1", "sda", 5), [0, 0, 1, 1, 2, 4, 6, 9, 14, 20, 29, 41, 58, 80, 110]),
            (_smart("n1", "sda", 197), [0] * 10 + [2, 3, 5, 8, 12]),
            (_smart("n1", "sda", 194), [38] * days),
            # sdb: an old, stable reallocated count (false-alarm bait)
            (_smart("n1", "sdb", 5), [40] * days),
            (_smart("n1", "sdb", 197), [0] * days),
            (_smart("n1", "sdb", 194), [37] * days),
        ]
    }
    url = f"http://127.0.0.1:{fake_prometheus.server_address[1]}"
    collector = FailureRiskCollector(PrometheusClient(url), tmp_path)
    registry = CollectorRegistry()
    registry.register(collector)
    assert collector.refresh()
    risk = lambda dev: registry.get_sample_value("vigil_failure_risk", {"kind": "disk", "node": "n1", "device": dev})
    assert risk("sda") > model.threshold >= risk("sdb")
    assert registry.get_sample_value(
        "vigil_failure_risk_reason", {"kind": "disk", "node": "n1", "device": "sda", "reason": "smart_5"}
    ) == 1.0


def test_smart_history_takes_the_decoded_temperature_and_prefers_smartctls_reading(fake_prometheus):
    from vigil.aiops.risk.disk_signals import SMART_DAILY_QUERY, TEMPERATURE_DAILY_QUERY, read_smart_history

    decoded = 37  # the exporter publishes 194 decoded to Celsius (exporters/smart_raw.py)
    fake_prometheus.ranges = {
        SMART_DAILY_QUERY: [
            (_smart("n1", "sda", 5), [0, 3, 3]),
            (_smart("n1", "sda", 194), [decoded] * 3),
            (_smart("n1", "sdb", 194), [decoded] * 3),
        ],
        TEMPERATURE_DAILY_QUERY: [({"node": "n1", "device": "sdb"}, [41, 42, 43]),
                                  ({"node": "n1", "device": "nvme0"}, [50, 50, 50])],
    }
    reader = PrometheusClient(f"http://127.0.0.1:{fake_prometheus.server_address[1]}")
    history = read_smart_history(reader, now=1_800_000_000.0)
    assert sorted(history["disk"].unique()) == ["n1/sda", "n1/sdb"]  # the NVMe disk is not scored
    sda = history[history["disk"] == "n1/sda"]
    assert sda["day"].tolist() == [-2, -1, 0]
    assert sda["smart_194"].tolist() == [37, 37, 37]
    assert sda["smart_5"].tolist() == [0, 3, 3] and sda["smart_197"].tolist() == [0, 0, 0]
    assert history.loc[history["disk"] == "n1/sdb", "smart_194"].tolist() == [41, 42, 43]


def test_a_corrupt_disk_model_is_logged_and_gpu_risk_still_exported(fake_prometheus, tmp_path, caplog):
    (tmp_path / "disk_model.joblib").write_bytes(b"not a model")
    fake_prometheus.answers = {GPU_INVENTORY_QUERY: [(_gpu("n1", "0"), 1)]}
    collector = FailureRiskCollector(PrometheusClient(f"http://127.0.0.1:{fake_prometheus.server_address[1]}"), tmp_path)
    registry = CollectorRegistry()
    registry.register(collector)
    assert collector.refresh()
    assert "cannot load the disk model" in caplog.text
    assert registry.get_sample_value("vigil_failure_risk", {"kind": "gpu", "node": "n1", "gpu": "0"}) > 0


def test_a_retrained_disk_model_is_picked_up_without_a_restart(fake_prometheus, tmp_path):
    from vigil.aiops.disk.model import save_model, train_disk_model
    from vigil.aiops.disk.simulate import FleetSpec, simulate_fleet
    from vigil.aiops.risk.disk_signals import SMART_DAILY_QUERY

    fake_prometheus.ranges = {SMART_DAILY_QUERY: [(_smart("n1", "sda", 5), [3, 3, 3])]}
    collector = FailureRiskCollector(PrometheusClient(f"http://127.0.0.1:{fake_prometheus.server_address[1]}"), tmp_path)
    registry = CollectorRegistry()
    registry.register(collector)
    assert collector.refresh()
    labels = {"kind": "disk", "node": "n1", "device": "sda"}
    assert registry.get_sample_value("vigil_failure_risk", labels) is None  # no model yet
    model, _ = train_disk_model(simulate_fleet(FleetSpec(disks=300, days=40, seed=5)))
    save_model(model, tmp_path)
    assert collector.refresh()
    assert registry.get_sample_value("vigil_failure_risk", labels) is not None


def test_collector_exports_the_threshold_each_model_is_operated_at(fake_prometheus, tmp_path):
    """GPU: gpu_weights.json's, once; SATA: the loaded disk model's, per disk, following a recalibration;
    NVMe: nvme_weights.json's, per disk. The alerts compare each risk with these (rules/specs/aiops.yaml)."""
    import os
    from dataclasses import replace

    from vigil.aiops.disk import MODEL_FILE
    from vigil.aiops.disk.model import save_model, train_disk_model
    from vigil.aiops.disk.simulate import FleetSpec, simulate_fleet
    from vigil.aiops.risk import nvme_score
    from vigil.aiops.risk.disk_signals import SMART_DAILY_QUERY

    fake_prometheus.answers = {GPU_INVENTORY_QUERY: [(_gpu("n1", "0"), 1), (_gpu("n1", "1"), 1)],
                               nvme_score.NVME_QUERIES["media_errors"]: [({"node": "n2", "device": "nvme0n1"}, 5)]}
    fake_prometheus.ranges = {SMART_DAILY_QUERY: [(_smart("n1", "sda", 5), [3, 3, 3])]}
    model, _ = train_disk_model(simulate_fleet(FleetSpec(disks=300, days=40, seed=5)))
    save_model(model, tmp_path)
    collector = FailureRiskCollector(PrometheusClient(f"http://127.0.0.1:{fake_prometheus.server_address[1]}"), tmp_path)
    registry = CollectorRegistry()
    registry.register(collector)
    threshold = lambda labels: registry.get_sample_value("vigil_failure_risk_threshold", labels)
    assert threshold({"kind": "gpu", "model": "gpu"}) is None  # nothing scored yet
    assert collector.refresh()
    # at the risk's precision (6 decimals), so the alert compares what the scrape shows
    assert threshold({"kind": "gpu", "model": "gpu"}) == round(json.loads(gpu_score.WEIGHTS_FILE.read_text())["threshold"], 6)
    sata = {"kind": "disk", "node": "n1", "device": "sda", "model": "sata"}
    assert threshold(sata) == round(model.threshold, 6)
    nvme = {"kind": "disk", "node": "n2", "device": "nvme0n1", "model": "nvme"}
    assert threshold(nvme) == round(nvme_score.load_weights()["threshold"], 6) < model.threshold
    # `calibrate-risk --write` rewrites the model file with a new threshold: the next refresh exports it
    save_model(replace(model, threshold=0.9), tmp_path)
    stamp = (tmp_path / MODEL_FILE).stat().st_mtime_ns + 1_000_000_000  # a later write, even within one clock tick
    os.utime(tmp_path / MODEL_FILE, ns=(stamp, stamp))
    assert collector.refresh()
    assert threshold(sata) == 0.9


def test_a_busy_gpu_beside_idle_ones_is_compared_with_the_busy_ones():
    """A hung job's GPUs (0-3) cool beside another job's busy ones (4-6) on the same node: the busy GPUs
    are far warmer than the node's median without running hot. Peers at a similar load are the comparison."""
    temps, loads = [38, 37, 38, 36, 72, 71, 73, 40], [0.0, 0.0, 0.01, 0.0, 0.95, 0.9, 0.97, 0.0]

    def scored(name: str, temperatures: list[float], utilizations: list[float] | None) -> dict:
        node = _node(name, temperatures)
        for gpu, load in zip(node, utilizations or [None] * len(node)):
            gpu.utilization = load
        risks = {r.gpu: r for r in score_gpus(node)}
        return {gpu.gpu: (gpu.temperature_z, risks[gpu.gpu]) for gpu in node}

    with_loads = scored("n", temps, loads)
    assert all(z <= 1.0 for z, _ in with_loads.values()), with_loads
    # without the loads (where no utilization is exported) the busy ones stand out, as before
    bare = scored("n", temps, None)
    assert min(bare[g][0] for g in ("4", "5", "6")) > 3
    # a GPU running hot among busy peers still stands out
    hot = scored("h", [38, 37, 38, 36, 72, 71, 90, 40], loads)
    assert hot["6"][0] > 3 and hot["6"][1].top_reason == "temperature_above_peers"


def test_gpus_whose_job_just_ended_are_no_peers_of_the_busy_ones():
    """Seen on a demo: a job on GPUs 2-7 ended a minute ago; they idle and cool at once, yet their 5-minute
    mean load is still as high as that of GPUs 0-1, whose job computes on. Compared with them, GPU 1 stood 3.7
    robust z above its peers and opened a GpuFailureRiskHigh ticket on a healthy node. The load now keeps them
    apart; a GPU hot among its true peers still stands out."""
    temps, recent = [67, 76, 35, 35, 35, 35, 35, 35], [0.76, 0.95, 0.79, 0.61, 0.83, 0.71, 0.72, 0.84]
    now = [0.8, 0.9, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]

    def zs(temperatures: list[float], loads_now: list[float] | None) -> dict[str, float]:
        node = _node("n", temperatures)
        for gpu, load, load_now in zip(node, recent, loads_now or [None] * len(node)):
            gpu.utilization, gpu.utilization_now = load, load_now
        score_gpus(node)
        return {gpu.gpu: gpu.temperature_z for gpu in node}

    assert zs(temps, None)["1"] > 3  # the 5-minute mean alone: the false alarm
    assert max(zs(temps, now).values()) <= 1.0
    assert zs([67, 76, 66, 68, 67, 95, 66, 67], [0.8] * 8)["5"] > 3
