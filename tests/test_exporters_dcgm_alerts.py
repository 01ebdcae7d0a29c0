"""The shipped GPU rules fire on the DCGM backend's series: a real Prometheus scrapes `vigil exporter gpu
--backend dcgm` (reading a simulated dcgm-exporter) and evaluates the generated rules."""

from __future__ import annotations

import shutil
import subprocess

import pytest
import requests
from click.testing import CliRunner
from exporters_nvml_support import free_ports, run_until_ready, stop, wait_until

from vigil.cli import main
from vigil.exporters.sim.dcgm_page import PageServer, gpu_uuid, render_page

PROMETHEUS = shutil.which("prometheus")
pytestmark = pytest.mark.skipif(PROMETHEUS is None, reason="prometheus is not installed")
NODE = "dcgm-node-1"


def firing(prometheus: str) -> set[tuple[str, str]]:
    """(alertname, gpu label or '') of the alerts firing for NODE."""
    answer = requests.get(f"{prometheus}/api/v1/query", timeout=5,
                          params={"query": f'ALERTS{{alertstate="firing", node="{NODE}"}}'}).json()
    return {(r["metric"]["alertname"], r["metric"].get("gpu", "")) for r in answer["data"]["result"]}


@pytest.fixture
def prometheus_on_dcgm(tmp_path):
    """(prometheus URL, page state) with the shipped rules (every `for` capped at 5 s) evaluated every second
    on the DCGM bridge, which reads a simulated dcgm-exporter whose GPU count the test changes."""
    page = {"gpus": 4}
    dcgm = PageServer(lambda: render_page(NODE, gpus=page["gpus"]))
    generated = CliRunner().invoke(main, ["rules", "generate", "--max-for", "5s", "-o", str(tmp_path)])
    assert generated.exit_code == 0, generated.output
    bridge_port = free_ports(2)
    prom_port = bridge_port + 1
    (tmp_path / "prometheus.yml").write_text(
        "global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
        f"rule_files: ['{tmp_path / 'vigil-rules.yml'}']\n"
        "scrape_configs:\n"
        f"  - job_name: vigil-gpu\n    static_configs: [{{targets: ['127.0.0.1:{bridge_port}']}}]\n")
    bridge = run_until_ready(["--backend", "dcgm", "--dcgm-url", dcgm.url, "--node", NODE, "--interval", "500ms",
                              "--listen", f"127.0.0.1:{bridge_port}"], f"http://127.0.0.1:{bridge_port}/metrics")
    prom = subprocess.Popen([PROMETHEUS, f"--config.file={tmp_path / 'prometheus.yml'}",
                             f"--storage.tsdb.path={tmp_path / 'tsdb'}", f"--web.listen-address=127.0.0.1:{prom_port}"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{prom_port}"
    try:
        yield url, page
    finally:
        prom.terminate()
        prom.wait(timeout=30)
        stop(bridge)
        dcgm.close()


def test_gpu_missing_fires_when_a_gpu_vanishes_from_the_dcgm_exporter_page(prometheus_on_dcgm):
    url, page = prometheus_on_dcgm

    def visible() -> float | None:
        try:
            answer = requests.get(f"{url}/api/v1/query", params={"query": "vigil_node_gpus_visible"}, timeout=5)
        except requests.ConnectionError:
            return None
        if answer.status_code != 200:  # a Prometheus still starting answers 503 before its first query
            return None
        result = answer.json()
        return float(result["data"]["result"][0]["value"][1]) if result["data"]["result"] else None

    wait_until(lambda: visible() == 4, timeout=30, step=0.3)
    assert firing(url) == set()
    page["gpus"] = 3  # GPU 3 drops off dcgm-exporter's page
    wait_until(lambda: {("GpuMissing", ""), ("GpuFallenOffBus", "3")} <= firing(url), timeout=30, step=0.5)
    lost = requests.get(f"{url}/api/v1/query", params={"query": "vigil_gpu_up == 0"}, timeout=5).json()
    assert [r["metric"]["uuid"] for r in lost["data"]["result"]] == [gpu_uuid(NODE, 3)]
