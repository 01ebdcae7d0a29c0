"""The node family's disk rules on real series: a real Prometheus scrapes `vigil exporter node --simulate`
with a degraded disk and evaluates the shipped rules; only that disk's alerts fire, with its labels."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest
import requests
from click.testing import CliRunner
from exporters_nvml_support import answers, free_ports, wait_until

from vigil.cli import main

PROMETHEUS = shutil.which("prometheus")
pytestmark = pytest.mark.skipif(PROMETHEUS is None, reason="prometheus is not installed")
NODE = "disk-node-7"


def firing(prometheus: str) -> set[tuple[str, str, str]]:
    """(alertname, device, attribute_id) of the alerts firing for NODE."""
    try:
        answer = requests.get(f"{prometheus}/api/v1/query", timeout=5,
                              params={"query": f'ALERTS{{alertstate="firing", node="{NODE}"}}'}).json()
    except requests.ConnectionError:
        return set()
    return {(r["metric"]["alertname"], r["metric"].get("device", ""), r["metric"].get("attribute_id", ""))
            for r in answer["data"]["result"]}


@pytest.fixture
def prometheus_on_a_degraded_disk(tmp_path):
    """Prometheus (1 s scrape and evaluation, every `for` capped at 2 s) on the node health exporter whose
    simulated disk 0 (/dev/sda) has had a burst of pending and offline-uncorrectable sectors."""
    generated = CliRunner().invoke(main, ["rules", "generate", "--max-for", "2s", "-o", str(tmp_path)])
    assert generated.exit_code == 0, generated.output
    exporter_port = free_ports(2)
    prom_port = exporter_port + 1
    (tmp_path / "prometheus.yml").write_text(
        "global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
        f"rule_files: ['{tmp_path / 'vigil-rules.yml'}']\n"
        "scrape_configs:\n"
        f"  - job_name: prometheus\n    static_configs: [{{targets: ['127.0.0.1:{prom_port}']}}]\n"
        f"  - job_name: vigil-node-health\n    honor_labels: true\n"
        f"    static_configs: [{{targets: ['127.0.0.1:{exporter_port}']}}]\n")
    exporter = subprocess.Popen(
        [sys.executable, "-P", "-m", "vigil.cli", "exporter", "node", "--listen", f"127.0.0.1:{exporter_port}",
         "--node", NODE, "--simulate", "--sim-disks", "4", "--sim-fault", "0:pending_burst", "--interval", "1s"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    prom = subprocess.Popen([PROMETHEUS, f"--config.file={tmp_path / 'prometheus.yml'}",
                             f"--storage.tsdb.path={tmp_path / 'tsdb'}", f"--web.listen-address=127.0.0.1:{prom_port}"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_until(lambda: answers(f"http://127.0.0.1:{exporter_port}/metrics") or exporter.poll() is not None,
                   timeout=30, step=0.2)
        assert exporter.poll() is None, exporter.communicate()[1].decode()
        yield f"http://127.0.0.1:{prom_port}"
    finally:
        for proc in (prom, exporter):
            proc.terminate()
            proc.wait(timeout=30)


def test_a_disk_with_pending_sectors_fires_the_disk_rule_for_that_disk_only(prometheus_on_a_degraded_disk):
    url = prometheus_on_a_degraded_disk
    expected = {("DiskSmartUncorrectableSectors", "/dev/sda", "197"), ("DiskSmartUncorrectableSectors", "/dev/sda", "198")}
    wait_until(lambda: expected <= firing(url), timeout=60, step=0.5)
    # a few more evaluations: nothing else of this node fires (healthy disks, SMART readable and fresh)
    def rounds() -> float:
        # the node family's group (groups with an `interval` of their own, e.g. 1m, run less often)
        query = 'min(prometheus_rule_group_iterations_total{rule_group=~".*;vigil-node"})'
        now = requests.get(f"{url}/api/v1/query", params={"query": query}, timeout=5).json()["data"]["result"]
        return float(now[0]["value"][1]) if now else 0.0

    start = rounds()
    wait_until(lambda: rounds() >= start + 3, timeout=30, step=0.5)
    assert firing(url) == expected
