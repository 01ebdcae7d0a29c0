"""Risk export and ALERTS mining against a real Prometheus (/usr/bin/prometheus on a loopback port)
scraping a prometheus_client exporter started here and evaluating two alert rules.

One Prometheus serves both the GPU risk test and the suggest-inhibitions test, to start it only once.
"""

from __future__ import annotations

import itertools
import shutil
import subprocess
import time
from pathlib import Path

import pytest
import requests
import yaml
from click.testing import CliRunner
from prometheus_client import CollectorRegistry, start_http_server
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

from vigil.aiops.risk import gpu_score
from vigil.aiops.risk.collector import FailureRiskCollector
from vigil.common.ports import free_port
from vigil.common.prometheus_api import PrometheusClient
from vigil.cli.aiops_risk import suggest_inhibitions

PROMETHEUS = Path("/usr/bin/prometheus")
pytestmark = [pytest.mark.e2e, pytest.mark.skipif(not PROMETHEUS.exists(), reason="prometheus is not installed")]

GPU_TEMPS = {"0": 60, "1": 61, "2": 60, "3": 60}  # GPU 2 carries memory precursors
# sda: a burst of pending and offline-uncorrectable sectors; sdb: an old, stable reallocated count
DISKS = {"sda": {5: 12, 187: 9, 188: 0, 197: 240, 198: 120, 194: 36},
         "sdb": {5: 40, 187: 0, 188: 0, 197: 0, 198: 0, 194: 36}}


class _SickGpuExporter:
    """A GPU exporter's series for node `e2e`; GPU 2's corrected ECC and XID 94 counters grow each scrape."""

    def __init__(self):
        self._scrapes = itertools.count(1)

    def collect(self):
        n = next(self._scrapes)
        labels = ["node", "gpu", "uuid"]
        up = GaugeMetricFamily("vigil_gpu_up", "up", labels=labels)
        temp = GaugeMetricFamily("vigil_gpu_temperature_celsius", "t", labels=labels + ["sensor"])
        pending = GaugeMetricFamily("vigil_gpu_remap_pending", "p", labels=labels)
        ecc = CounterMetricFamily("vigil_gpu_ecc_errors_total", "ecc", labels=labels + ["error_type", "counter_type"])
        xid = CounterMetricFamily("vigil_gpu_xid_errors_total", "xid", labels=labels + ["xid", "class"])
        for gpu, t in GPU_TEMPS.items():
            ids = ["e2e", gpu, f"GPU-{gpu}"]
            sick = gpu == "2"
            up.add_metric(ids, 1)
            temp.add_metric(ids + ["gpu"], t)
            pending.add_metric(ids, 1 if sick else 0)
            ecc.add_metric(ids + ["corrected", "aggregate"], 5 * n if sick else 2)
            xid.add_metric(ids + ["94", "warning"], n if sick else 0)
        down = GaugeMetricFamily("e2e_node_down", "synthetic outage", labels=["node"])
        down.add_metric(["e2e"], 1)
        lost = GaugeMetricFamily("e2e_gpu_lost", "synthetic GPU loss", labels=["node", "gpu"])
        for gpu in ("0", "1"):
            lost.add_metric(["e2e", gpu], 1)
        smart = GaugeMetricFamily("vigil_disk_smart_attribute_raw", "raw", labels=["node", "device", "attribute_id", "attribute"])
        disk_temp = GaugeMetricFamily("vigil_disk_temperature_celsius", "t", labels=["node", "device"])
        for device, counters in DISKS.items():
            for attr, value in counters.items():
                smart.add_metric(["e2e", device, str(attr), f"attr{attr}"], value)
            disk_temp.add_metric(["e2e", device], 36)
        # NVMe: nvme0 loses spare to growing media errors (as the simulator's nvme_media_errors fault); nvme1 is worn
        # 20 % and otherwise clean
        nvme = {name: GaugeMetricFamily(f"vigil_disk_nvme_{name}", name, labels=["node", "device"])
                for name in ("critical_warning", "percentage_used_ratio", "available_spare_ratio")}
        media = CounterMetricFamily("vigil_disk_nvme_media_errors", "media", labels=["node", "device"])
        for device, (warning, used, spare, errors) in {"nvme0": (4, 0.3, 0.6, 50 * n), "nvme1": (0, 0.2, 1.0, 0)}.items():
            for name, value in (("critical_warning", warning), ("percentage_used_ratio", used),
                                ("available_spare_ratio", spare)):
                nvme[name].add_metric(["e2e", device], value)
            media.add_metric(["e2e", device], errors)
        yield from (up, temp, pending, ecc, xid, down, lost, smart, disk_temp, media, *nvme.values())


@pytest.fixture(scope="module")
def prometheus(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("prom")
    registry = CollectorRegistry()
    registry.register(_SickGpuExporter())
    exporter_port, prom_port = free_port(), free_port()
    server, thread = start_http_server(exporter_port, addr="127.0.0.1", registry=registry)
    rules = {"groups": [{"name": "e2e", "interval": "1s", "rules": [
        {"alert": "NodeDown", "expr": "e2e_node_down == 1"},
        {"alert": "GpuLost", "expr": "e2e_gpu_lost == 1"},
    ]}]}
    (workdir / "rules.yml").write_text(yaml.safe_dump(rules))
    config = {
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
        "rule_files": [str(workdir / "rules.yml")],
        "scrape_configs": [{"job_name": "gpu", "static_configs": [{"targets": [f"127.0.0.1:{exporter_port}"]}]}],
    }
    (workdir / "prometheus.yml").write_text(yaml.safe_dump(config))
    process = subprocess.Popen(
        [str(PROMETHEUS), f"--config.file={workdir / 'prometheus.yml'}", f"--storage.tsdb.path={workdir / 'data'}",
         f"--web.listen-address=127.0.0.1:{prom_port}"],
        stdout=subprocess.DEVNULL, stderr=(workdir / "prometheus.log").open("w"),
    )
    url = f"http://127.0.0.1:{prom_port}"
    reader = PrometheusClient(url)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:  # ready once a rate over GPU 2's ECC counter exists
            try:
                if reader.query('rate(vigil_gpu_ecc_errors_total{gpu="2"}[1h]) > 0') and reader.query("ALERTS"):
                    break
            except Exception:
                pass
            if process.poll() is not None:
                pytest.fail("prometheus exited: " + (workdir / "prometheus.log").read_text()[-2000:])
            time.sleep(0.5)
        else:
            pytest.fail("prometheus did not scrape the exporter in 60 s")
        yield url
    finally:
        process.terminate()
        process.wait(timeout=20)
        server.shutdown()
        shutil.rmtree(workdir, ignore_errors=True)


def test_gpu_with_precursors_ranks_first_from_real_prometheus(prometheus):
    collector = FailureRiskCollector(PrometheusClient(prometheus), Path("/nonexistent-model-dir"))
    registry = CollectorRegistry()
    registry.register(collector)
    assert collector.refresh()
    risk = {g: registry.get_sample_value("vigil_failure_risk", {"kind": "gpu", "node": "e2e", "gpu": g}) for g in GPU_TEMPS}
    assert max(risk, key=risk.get) == "2"
    assert risk["2"] > 0.5 > max(v for g, v in risk.items() if g != "2")
    reason = lambda name: registry.get_sample_value(
        "vigil_failure_risk_reason", {"kind": "gpu", "node": "e2e", "gpu": "2", "reason": name})
    assert reason("remap_pending") == pytest.approx(gpu_score.WEIGHTS["remap_pending"])
    assert reason("corrected_ecc_rate") > 0 and reason("xid_92_94") > 0
    assert reason("temperature_above_peers") == 0.0  # GPU 2 is no hotter than its peers


def test_suggest_inhibitions_reads_alerts_history_from_prometheus(prometheus):
    result = CliRunner().invoke(suggest_inhibitions, ["--prometheus-url", prometheus, "--lookback", "10m",
                                                      "--min-support", "2"])
    assert result.exit_code == 0, result.output
    rules = yaml.safe_load(result.output)["inhibit_rules"]
    assert rules == [{"source_matchers": ['alertname="NodeDown"'], "target_matchers": ['alertname="GpuLost"'],
                      "equal": ["node"]}]
    assert "parent NodeDown{node=e2e}" in result.output


def test_nvme_risk_from_real_prometheus_with_the_calibrated_weights(prometheus):
    from vigil.aiops.risk.nvme_score import load_weights

    collector = FailureRiskCollector(PrometheusClient(prometheus), Path("/nonexistent-model-dir"))
    registry = CollectorRegistry()
    registry.register(collector)
    assert collector.refresh()
    risk = lambda dev: registry.get_sample_value("vigil_failure_risk", {"kind": "disk", "node": "e2e", "device": dev})
    assert risk("nvme0") > load_weights()["threshold"] > risk("nvme1")
    reasons = {s.labels["reason"]: s.value for s in registry.collect() if s.name == "vigil_failure_risk_reason"
               for s in s.samples if s.labels.get("device") == "nvme0"}
    # one series per disk, value 1 (DiskFailureRiskHigh joins it): the growing media errors or the spare they ate
    assert len(reasons) == 1 and set(reasons) <= {"media_errors_growth_7d", "spare_used"} and 1.0 in reasons.values()
    assert risk("sda") is None  # no disk model: the SATA disks are not scored


def test_disk_risk_from_real_prometheus_with_a_trained_model(prometheus, tmp_path):
    from vigil.aiops.disk.model import save_model, train_disk_model
    from vigil.aiops.disk.simulate import FleetSpec, simulate_fleet

    model, _ = train_disk_model(simulate_fleet(FleetSpec(disks=800, days=60, seed=3)))
    save_model(model, tmp_path)
    collector = FailureRiskCollector(PrometheusClient(prometheus), tmp_path)
    registry = CollectorRegistry()
    registry.register(collector)
    assert collector.refresh()
    risk = lambda dev: registry.get_sample_value("vigil_failure_risk", {"kind": "disk", "node": "e2e", "device": dev})
    # a fresh Prometheus holds one day: levels only, no growth yet
    assert risk("sda") > model.threshold > risk("sdb")
