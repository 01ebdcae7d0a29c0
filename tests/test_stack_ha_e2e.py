"""End to end with the real binaries: `vigil up --profile ha` runs two Prometheus replicas, a 3-peer
Alertmanager cluster gossiping on loopback, two notifiers on one PostgreSQL and VictoriaMetrics.

A fault in the simulated fleet opens exactly one incident and pages each tier once; with one
Alertmanager peer and one notifier SIGKILLed mid-incident, the resolution still arrives exactly once.
Both replicas remote-write into VictoriaMetrics, which keeps one series and one sample per scrape
interval; a dashboard's panels and an AIOps training run read the same data back from it.

One stack for the module (it takes ~15 s to start); the series and dashboard cases run first, on a
healthy fleet, then the fault case, then the training run (by then VictoriaMetrics holds enough history).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import time
from collections import Counter

import pytest
import requests

from stack_support import FAST_STACK, RunningStack, free_port_base, vigil, wait_for
from vigil.common.prometheus_api import PrometheusClient
from vigil.dashboards.build import dashboard_models
from vigil.dashboards.live import run_dashboard
from vigil.stack.config import RunLayout, postgres

pytestmark = pytest.mark.e2e

NODES, GPUS = 2, 2
TIER_WAIT_S = 4
# the stack tests' fast timings, the ha profile and a minimal on-call file
CONFIG = FAST_STACK.format(nodes=NODES, gpus=GPUS, jobs=0, aiops="false", backfill_days=0, node_health="false") \
    + "  profile: ha\n  oncall_config: {oncall}\n"
# two tiers, one contact each: every page of an incident is (person, tier) and must appear once
ONCALL = f"""\
people:
  alice: {{contacts: {{phone: {{inbox: true, kind: phone}}}}}}
  bob:   {{contacts: {{phone: {{inbox: true, kind: phone}}}}}}
policies:
  rota:
    tiers:
      - {{name: DRI, notify: [{{person: alice}}], escalate_after: {TIER_WAIT_S}s}}
      - {{name: senior, notify: [{{person: bob}}], escalate_after: 1h}}
default_policy: rota
"""
FAULT = {"fault": "xid79", "node": "node-1", "gpu": 1}
FAULT_ALERT = "GpuFallenOffBus"
# Prometheus evaluates every second with `for` capped at 2 s, Alertmanager flushes every second and a
# later peer waits 2 s per position: a duplicate notification would reach the notifiers within this
SETTLE_S = 6.0
REPLICAS = ["prometheus", "prometheus-2", "alertmanager", "alertmanager-2", "alertmanager-3", "notifier",
            "notifier-2", "postgres", "victoria-metrics"]


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("ha-stack")
    (tmp / "oncall.yaml").write_text(ONCALL)
    (tmp / "vigil.yaml").write_text(CONFIG.format(oncall=tmp / "oncall.yaml"))
    base, run_dir = free_port_base(), tmp / "run"
    result = vigil("up", "--detach", "--config", str(tmp / "vigil.yaml"), "--run-dir", str(run_dir),
                   "--port-base", str(base), "--gpu-backend", "sim", timeout=300)
    if result.returncode != 0:
        logs = "\n".join(f"--- {p.name}\n{p.read_text(errors='replace')[-2000:]}" for p in sorted((run_dir / "logs").glob("*.log")))
        raise AssertionError(f"vigil up --profile ha failed:\n{result.stdout}\n{result.stderr}\n{logs}")
    running = RunningStack(run_dir, base, started=result)
    yield running
    assert running.cli("down", "--timeout", "60").returncode == 0
    shutil.rmtree(postgres.data_dir(RunLayout(run_dir.resolve())), ignore_errors=True)  # as root: under /tmp


def vm(stack: RunningStack) -> PrometheusClient:
    return PrometheusClient(stack.state()["urls"]["metrics_query"])


def test_status_shows_every_replica_healthy_and_the_alertmanagers_form_one_cluster(stack: RunningStack):
    status = stack.cli("status", "--json")
    assert status.returncode == 0, status.stdout + status.stderr
    components = json.loads(status.stdout)["components"]
    assert set(REPLICAS) <= set(components) and all(c["healthy"] for c in components.values()), components
    # a peer says "settling" until the gossip has been stable for a few rounds after it joined (seconds,
    # bounded by its settle timeout, a minute by default), also once it sees all three: wait for both
    for peer in ("alertmanager", "alertmanager-2", "alertmanager-3"):
        cluster = wait_for(lambda: (c := requests.get(f"{stack.url(peer)}/api/v2/status", timeout=5).json()["cluster"])
                           and len(c.get("peers") or []) == 3 and c["status"] == "ready" and c,
                           f"3 peers seen by {peer}, settled", timeout=90)
        assert cluster["status"] == "ready" and len(cluster["peers"]) == 3


def test_both_replicas_remote_write_and_victoria_metrics_keeps_one_deduplicated_series_per_gpu(stack: RunningStack):
    for replica in ("prometheus", "prometheus-2"):
        client = PrometheusClient(stack.url(replica))
        wait_for(lambda: client.query('prometheus_remote_storage_samples_total{remote_name="victoria-metrics"} > 0'),
                 f"samples remote-written by {replica}", timeout=30)
    client = vm(stack)
    wait_for(lambda: client.query("count_over_time(vigil_gpu_utilization_ratio[10s]) >= 8"), "10 s of history in VM")
    series = client.query("vigil_gpu_utilization_ratio")
    assert len(series) == NODES * GPUS, [s.labels for s in series]  # not one per replica
    assert all("prometheus_replica" not in s.labels for s in series)
    # each replica scrapes every second: undeduplicated, 10 s would hold ~20 samples per series
    counts = [s.value for s in client.query("count_over_time(vigil_gpu_utilization_ratio[10s])")]
    assert max(counts) <= 11, counts


def test_a_dashboards_panels_read_the_same_data_from_victoria_metrics_as_from_prometheus(stack: RunningStack):
    model = next(m for m in dashboard_models() if m["uid"] == "vigil-gpu")
    prometheus = PrometheusClient(stack.url("prometheus"))

    def panels_with_data(client: PrometheusClient) -> set[tuple[str, str]]:
        return {(r.panel, r.ref) for r in run_dashboard(model, client) if r.series}

    # run on its own, the test may come before the stack's first scrapes and rule evaluations
    wait_for(lambda: len(panels_with_data(prometheus)) >= 10, "10 panels with data in Prometheus", timeout=60)
    assert [f"{r.panel}: {r.error}" for r in run_dashboard(model, vm(stack)) if r.error] == []
    # remote write lags Prometheus by a few seconds, and a panel may get its first data meanwhile:
    # the two agree within the wait
    wait_for(lambda: panels_with_data(vm(stack)) == panels_with_data(prometheus),
             "the same panels with data in VictoriaMetrics as in Prometheus", timeout=60)


def inbox(notifier_url: str, token: str) -> list[dict]:
    r = requests.get(f"{notifier_url}/api/v1/inbox", params={"limit": 500},
                     headers={"Authorization": f"Bearer {token}"}, timeout=5)
    r.raise_for_status()
    return r.json()["pages"]


def incidents(notifier_url: str, token: str) -> list[dict]:
    r = requests.get(f"{notifier_url}/api/v1/incidents", params={"limit": 500},
                     headers={"Authorization": f"Bearer {token}"}, timeout=5)
    r.raise_for_status()
    return [i for i in r.json()["incidents"] if i["labels"].get("alertname") == FAULT_ALERT]


def received(notifier_url: str) -> float:
    """Webhook notifications this notifier process took in, stored or found duplicate."""
    text = requests.get(f"{notifier_url}/metrics", timeout=5).text
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
               if line.startswith(("vigil_notifier_webhook_received_total", "vigil_notifier_webhook_duplicates_total")))


def chaos(stack: RunningStack, path: str, body: dict) -> None:
    r = requests.post(f"{stack.state()['urls']['gpu_control']}{path}", json=body, timeout=5)
    assert r.status_code == 200, r.text


def test_one_incident_one_page_per_tier_and_one_resolution_despite_a_killed_peer_and_notifier(stack: RunningStack):
    token, survivor = stack.token(), stack.url("notifier-2")

    def fault_pages(status: str) -> list[tuple[str, int | None]]:
        return sorted((p["recipient"], p.get("tier")) for p in inbox(survivor, token)
                      if p["labels"].get("alertname") == FAULT_ALERT and p["status"] == status)

    chaos(stack, "/chaos/inject", FAULT)
    try:
        wait_for(lambda: len(fault_pages("firing")) >= 2, "pages of both tiers", timeout=60)
        for replica in ("prometheus", "prometheus-2"):  # both replicas fire it: Alertmanager deduplicates them
            assert PrometheusClient(stack.url(replica)).query(f'ALERTS{{alertname="{FAULT_ALERT}",alertstate="firing"}}')
        assert received(stack.url("notifier")) > 0 and received(survivor) > 0  # every webhook went to both
        settle_until = time.monotonic() + SETTLE_S
        while time.monotonic() < settle_until and len(fault_pages("firing")) == 2:
            time.sleep(0.5)
        firing = fault_pages("firing")
        assert [who for who, _ in firing] == ["alice", "bob"] and [t for _, t in firing] in ([0, 1], [None, 1]), firing
        opened = incidents(survivor, token)
        assert len(opened) == 1 and opened[0]["status"] == "firing", opened

        pids = {name: c["pid"] for name, c in stack.state()["components"].items()}
        for victim in ("alertmanager", "notifier"):  # mid-incident: one peer, one notifier replica
            os.kill(pids[victim], signal.SIGKILL)
    finally:
        chaos(stack, "/chaos/clear", {})

    wait_for(lambda: len(fault_pages("resolved")) >= 2, "resolution pages", timeout=60)
    settle_until = time.monotonic() + SETTLE_S
    while time.monotonic() < settle_until and len(fault_pages("resolved")) == 2:
        time.sleep(0.5)
    resolved = Counter(who for who, _ in fault_pages("resolved"))
    assert resolved == {"alice": 1, "bob": 1}, (incidents(survivor, token), [  # each paged person hears it once
        p for p in inbox(survivor, token) if p["labels"].get("alertname") == FAULT_ALERT])
    assert len(fault_pages("firing")) == 2
    closed = incidents(survivor, token)
    assert [(i["id"], i["status"]) for i in closed] == [(opened[0]["id"], "resolved")], closed


def test_aiops_training_reads_its_history_from_victoria_metrics(stack: RunningStack, tmp_path):
    url = stack.state()["urls"]["metrics_query"]
    # a baseline needs at least 12 points on its grid: 20 s of 1 s scrapes in VictoriaMetrics
    wait_for(lambda: vm(stack).query("min(count_over_time(vigil_gpu_utilization_ratio[1m])) >= 20"),
             "20 s of history in VictoriaMetrics")
    result = vigil("aiops", "train", "--prometheus-url", url, "--match", "vigil_gpu_utilization_ratio",
                   "--lookback", "1m", "--step", "1s", "--max-gap", "10s", "--model-dir", str(tmp_path), timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    store = json.loads((tmp_path / "baselines.json").read_text())
    assert store["source"] == url
    assert sorted((s["labels"]["node"], s["labels"]["gpu"]) for s in store["series"]) == \
        [(f"node-{n}", str(g)) for n in range(1, NODES + 1) for g in range(GPUS)]
