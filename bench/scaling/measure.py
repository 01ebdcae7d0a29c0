"""One Prometheus, then N hashmod shards remote-writing to VictoriaMetrics with vmalert running the global
rules, over the same simulated fleet: the figures `run.py` reports."""

from __future__ import annotations

import math
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from pathlib import Path

import requests

import stores
from reuse import rules_run, stack
from vigil.stack.config.prometheus import GPU_JOB
from vigil.stack.config.sharding import HASH_LABEL, shard_of, sharded_config

SCRAPE_S = rules_run.SCRAPE_S
RULE_LIMIT_MS = 1000.0


def scrape_p99_s(url: str, window_s: float) -> float:
    """The 99th percentile of every scrape of the fleet's targets over the window (seconds)."""
    query = f'scrape_duration_seconds{{job="{GPU_JOB}"}}[{max(SCRAPE_S, int(window_s))}s]'
    result = requests.get(f"{url}/api/v1/query", params={"query": query}, timeout=60).json()["data"]["result"]
    values = sorted(float(v) for series in result for _, v in series["values"])
    return values[min(len(values) - 1, math.ceil(0.99 * len(values)) - 1)] if values else float("nan")


def observe(url: str, prom_pid: int, fleet_pid: int, nodes: int, evaluations: int) -> dict:
    """The rule benchmark's figures (groups, RSS, head series, CPU) plus samples ingested per second and
    the scrape duration p99 over the same window."""
    began, m0 = time.time(), rules_run.prom_metrics(url)
    figures = rules_run.observe(url, prom_pid, fleet_pid, nodes, evaluations)
    m1, window = rules_run.prom_metrics(url), time.time() - began
    appended = "prometheus_tsdb_head_samples_appended_total"
    figures["samples_per_s"] = (sum(m1.get(appended, {}).values()) - sum(m0.get(appended, {}).values())) / window
    figures["scrape_p99_s"] = scrape_p99_s(url, window)
    figures["group_max_ms"] = max((g["max_ms"] for g in figures["groups"].values()), default=0.0)
    figures["slowest_group"] = max(figures["groups"], key=lambda g: figures["groups"][g]["max_ms"], default="-")
    figures["passed"] = (figures["group_max_ms"] < RULE_LIMIT_MS and figures["targets_up_end"] >= nodes
                         and figures["scrape_p99_s"] < SCRAPE_S)
    return figures


def single(nodes: int, args, rules: Path, workdir: Path) -> dict:
    """One Prometheus, every target, the whole catalog (as `bench/rules/run.py` measures it)."""
    with stack.fleet(nodes, args.gpus, args.fleet_refresh, workdir) as (fleet, fleet_port):
        prom_port = stack.free_port()
        config = stack.prometheus_config(fleet_port, nodes, rules, prom_port, SCRAPE_S)
        with stack.prometheus(config, workdir) as (prom, url):
            stack.wait_until(lambda: rules_run.targets_up(url) >= nodes, 60 + nodes / 20, f"{nodes} targets up",
                             step=2, process=prom)
            time.sleep(args.warmup)  # the first rounds create every series: not the steady state measured
            return observe(url, prom.pid, fleet.pid, nodes, args.evaluations)


def shard_config(base: dict, shards: int, shard: int, prom_port: int, vm_url: str) -> dict:
    """Shard `shard`'s prometheus.yml from `sharding.sharded_config`, with two bench-only changes: every
    simulated node is a target on the fleet's one port, so the hash reads the target's `instance` (one per
    node) instead of `__address__`; and every shard scrapes itself (the generator keeps the stack's own
    jobs on shard 0). Each shard remote-writes everything to VictoriaMetrics."""
    doc = sharded_config(base, shards, shard, {GPU_JOB})
    for job in doc["scrape_configs"]:
        for rule in job.get("relabel_configs", []):
            if rule.get("target_label") == HASH_LABEL:
                rule["source_labels"] = ["instance"]
    if shard:
        doc["scrape_configs"].insert(0, {"job_name": "prometheus",
                                         "static_configs": [{"targets": [f"127.0.0.1:{prom_port}"]}]})
    doc["remote_write"] = [{"url": f"{vm_url}/api/v1/write"}]
    return doc


def sharded(nodes: int, shards: int, args, shard_rules: Path, global_rules: dict, workdir: Path) -> dict:
    """N shards over one fleet, all remote-writing to one VictoriaMetrics; vmalert runs the global rules."""
    expected = [0] * shards
    for i in range(1, nodes + 1):
        expected[shard_of(f"node-{i}", shards)] += 1
    with ExitStack() as running:
        fleet, fleet_port = running.enter_context(stack.fleet(nodes, args.gpus, args.fleet_refresh, workdir))
        vm, vm_url = running.enter_context(stores.victoria_metrics(workdir, SCRAPE_S))
        proms = []
        for shard in range(shards):
            port, shard_dir = stack.free_port(), workdir / f"shard-{shard}"
            shard_dir.mkdir()
            base = stack.prometheus_config(fleet_port, nodes, shard_rules, port, SCRAPE_S)
            proms.append(running.enter_context(stack.prometheus(shard_config(base, shards, shard, port, vm_url),
                                                                shard_dir)))
        for (prom, url), want in zip(proms, expected):  # the split is the one shard_of predicts
            stack.wait_until(lambda: rules_run.targets_up(url) >= want, 60 + want / 20, f"{want} targets up on a shard",
                             step=2, process=prom)
        alert, alert_url = running.enter_context(stores.vmalert(global_rules, vm_url, workdir, SCRAPE_S))
        time.sleep(args.warmup)
        began, vm0 = time.time(), stores.vm_figures(vm_url, workdir / "vm-data")
        with ThreadPoolExecutor(shards) as pool:
            results = list(pool.map(lambda p: observe(p[0][1], p[0][0].pid, fleet.pid, p[1], args.evaluations),
                                    zip(proms, expected)))
        vm1, window = stores.vm_figures(vm_url, workdir / "vm-data"), time.time() - began
        vm_rss = stack.proc_figures(vm.pid)["rss_mib"]
        return {"nodes": nodes, "shards": results, "expected": expected, "global_groups": stores.vmalert_groups(alert_url),
                "vm_rss_mib": vm_rss, "vm_rows_per_s": (vm1["inserted"] - vm0["inserted"]) / window,
                "vm_bytes_per_sample": vm1["storage_bytes"] / vm1["rows"] if vm1["rows"] else float("nan"),
                "vm_growth_bytes_per_h": (vm1["dir_bytes"] - vm0["dir_bytes"]) / window * 3600,
                "vm_size_bytes": vm1["size_bytes"], "vm_rows": vm1["rows"], "window_s": window}
