"""`vigil aiops suggest-inhibitions --prometheus` against a real Prometheus (/usr/bin/prometheus on a free
loopback port) that fires the Watchdog, a cluster-wide SLO warning and node and GPU alerts: the
reviewer's demo-stack case. Only the node -> GPU rule may be proposed."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from vigil.aiops.correlate import firings_from_prometheus
from vigil.cli.aiops_risk import suggest_inhibitions
from vigil.common.ports import free_port
from vigil.common.prometheus_api import PrometheusClient, PrometheusUnavailable

PROMETHEUS = Path("/usr/bin/prometheus")
pytestmark = [pytest.mark.e2e, pytest.mark.skipif(not PROMETHEUS.exists(), reason="prometheus is not installed")]

# every alert fires from Prometheus' first evaluation on; rule labels give them their topology
ALERTS = {
    "Watchdog": {"severity": "info"},
    "NodeDown": {"node": "n1", "severity": "critical"},
    "GpuLost": {"node": "n1", "gpu": "0", "severity": "critical"},
    "GpuAvailabilityErrorBudgetBurnSlow": {"slo": "gpu-availability", "severity": "warning"},
    "GpuFallenOffBus": {"node": "n2", "gpu": "3", "severity": "critical"},
}


@pytest.fixture(scope="module")
def prometheus(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("prom")
    rules = [{"alert": name, "expr": "vector(1)", "labels": labels} for name, labels in ALERTS.items()]
    (workdir / "rules.yml").write_text(yaml.safe_dump({"groups": [{"name": "e2e", "interval": "1s", "rules": rules}]}))
    (workdir / "prometheus.yml").write_text(yaml.safe_dump(
        {"global": {"evaluation_interval": "1s"}, "rule_files": [str(workdir / "rules.yml")]}))
    port = free_port()
    process = subprocess.Popen(
        [str(PROMETHEUS), f"--config.file={workdir / 'prometheus.yml'}", f"--storage.tsdb.path={workdir / 'data'}",
         f"--web.listen-address=127.0.0.1:{port}"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        yield url
    finally:
        process.terminate()
        process.wait(timeout=20)


def _seen(url: str) -> set[str]:
    """The alertnames `suggest-inhibitions --lookback 1h` reads (its query is on a 15 s grid)."""
    now = time.time()
    try:
        return {f.alertname for f in firings_from_prometheus(PrometheusClient(url), now - 3600, now)}
    except PrometheusUnavailable:
        return set()


def test_the_watchdog_and_a_warning_never_mute_and_each_left_out_reason_is_counted(prometheus):
    deadline = time.monotonic() + 45
    while _seen(prometheus) != set(ALERTS):
        assert time.monotonic() < deadline, f"Prometheus history has only {_seen(prometheus)}"
        time.sleep(0.5)
    for flag in ("--prometheus", "--prometheus-url"):
        result = CliRunner().invoke(suggest_inhibitions, [flag, prometheus, "--lookback", "1h", "--min-support", "1"])
        assert result.exit_code == 0, result.output
        assert yaml.safe_load(result.output)["inhibit_rules"] == [
            {"source_matchers": ['alertname="NodeDown"'], "target_matchers": ['alertname="GpuLost"'], "equal": ["node"]}]
        # the Watchdog (by name: it has fired for seconds of the hour) covers the four others
        assert "#      4 always_firing_source:" in result.output
        # the SLO warning starts with GpuFallenOffBus (and NodeDown, GpuLost): never muting a critical
        assert "#      3 lower_severity_source:" in result.output
        assert "# always firing, never a source: Watchdog" in result.output
