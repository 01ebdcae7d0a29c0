"""Live proof of the AIOps panels: in a `vigil up` stack with the AIOps service (14 days of simulated history
backfilled, trained at start), every query of the AIOps dashboard and the disk dashboard's failure-risk
panels returns data, with the `$metric` variable resolved to a live baseline. Only the anomaly panel may
be empty: in a healthy stack the GPUs' load sits inside its band (tests/test_stack_aiops_e2e.py drives
one out of it). One GPU gets a corrected-ECC storm, so that "What drives the GPU risk" has a driver to
show: a healthy GPU's only possible one, its temperature above its peers', is there only by chance (2
GPUs per node are peers only while their loads agree), and once in a few runs it was not."""

from __future__ import annotations

import time

import pytest

from stack_support import start_stack
from vigil.common.prometheus_api import PrometheusClient
from vigil.dashboards.build import dashboard_models
from vigil.dashboards.live import run_dashboard

pytestmark = pytest.mark.e2e
HEALTHY_EMPTY = {("vigil-aiops", "Anomalies: outside the band")}


@pytest.fixture(scope="module")
def prometheus(tmp_path_factory):
    running = start_stack(tmp_path_factory.mktemp("dashboards-aiops"), nodes=2, gpus=2, aiops=True, node_health=True,
                          backfill_days=14)
    storm = running.cli("chaos", "inject", "ecc-storm", "--node", "node-2", "--gpu", "1")
    assert storm.returncode == 0, storm.stdout + storm.stderr
    yield PrometheusClient(running.url("prometheus"), timeout=5)
    assert running.cli("down").returncode == 0


def test_aiops_and_failure_risk_panels_return_data_from_a_stack_with_aiops(prometheus):
    models = {model["uid"]: model for model in dashboard_models()}
    wanted = [models["vigil-aiops"], models["vigil-disks"]]

    def missing():
        found = [r for model in wanted for r in run_dashboard(model, prometheus)
                 if model["uid"] == "vigil-aiops" or "vigil_failure_risk" in r.query]
        return found, [f"{r.dashboard} / {r.panel} ({r.ref}): {r.error or r.query}" for r in found
                       if (r.series == 0 or r.error or r.unresolved) and r.key not in HEALTHY_EMPTY]

    deadline = time.monotonic() + 60  # the disk model trains in the background after the first start
    while (left := missing()[1]) and time.monotonic() < deadline:
        time.sleep(1)
    found, left = missing()
    assert left == [], "AIOps panels without data:\n" + "\n".join(left)
    assert len({r.key for r in found if r.dashboard == "vigil-disks"}) == 2  # both failure-risk panels checked
    assert any('metric="vigil_gpu_utilization_ratio"' in r.query for r in found)  # $metric resolved live
