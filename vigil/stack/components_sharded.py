"""The components of the sharded profile (`vigil up --profile sharded --shards N`; docs/scaling.md,
"Sharded topology"; ports and scrape placement in `stack_config.sharded`).

The single profile's components, with: VictoriaMetrics first; N Prometheus shards in place of the one
Prometheus, each remote-writing its part; one AIOps service per shard in place of the one service, each
reading its own shard; vmalert last, evaluating the global rules over VictoriaMetrics once every shard's
samples arrive there; the notifier's postmortem charts read VictoriaMetrics (the whole fleet).
"""

from __future__ import annotations

import functools
import logging
import time
from pathlib import Path

import yaml

from vigil.common.prometheus_api import PrometheusClient, PrometheusUnavailable

from vigil.stack.components import GpuBackend, aiops_spec, component_specs, notifier_spec, prometheus_spec
from vigil.stack.components_ha import REMOTE_WRITE_FLAGS, victoria_metrics_spec
from vigil.stack.history import backfill_series, history_end, simulated_series
from vigil.stack.settings import StackSettings
from vigil.stack.config import RunLayout
from vigil.stack.config.ha import HaLayout
from vigil.stack.config.sharded import ShardedLayout, ShardedTopology, shard_name
from vigil.stack.config.sharding import SHARD_LABEL
from vigil.stack.config.vmalert import vmalert_argv
from vigil.stack.supervisor import ComponentSpec

log = logging.getLogger("vigil.stack.run")

FIRST_SAMPLES_WAIT_S = 30.0  # how long vmalert waits for every shard's first samples in VictoriaMetrics


def scraped_jobs(configs: list[Path]) -> set[str]:
    """The scrape jobs with at least one target in the shards' `prometheus.yml` files."""
    jobs = set()
    for config in configs:
        for job in yaml.safe_load(config.read_text()).get("scrape_configs") or []:
            if any(group.get("targets") for group in job.get("static_configs") or []):
                jobs.add(job["job_name"])
    return jobs


def await_every_shard(url: str, shards: int, configs: list[Path], timeout_s: float = FIRST_SAMPLES_WAIT_S):
    """vmalert's `prepare` hook: wait (boundedly) until VictoriaMetrics holds an `up` sample of every
    shard and of every scrape job, so that the global absent() guards (one per job) do not judge a store
    that a job's first scrape has not reached yet."""
    def prepare() -> None:
        client, deadline = PrometheusClient(url, timeout=2), time.monotonic() + timeout_s
        jobs = scraped_jobs(configs)
        while time.monotonic() < deadline:
            try:
                seen = [sample.labels for sample in client.query(f"count by ({SHARD_LABEL}, job) (up)")]
                if len({s.get(SHARD_LABEL) for s in seen}) >= shards and jobs <= {s.get("job") for s in seen}:
                    return
            except PrometheusUnavailable:
                pass
            time.sleep(0.3)
        log.warning("not every shard's and job's samples reached VictoriaMetrics within %.0fs; starting vmalert anyway",
                    timeout_s)
    return prepare


def vmalert_spec(settings: StackSettings, layout: RunLayout, binary: str) -> ComponentSpec:
    topology = ShardedTopology(settings)
    port = topology.vmalert_port
    argv = vmalert_argv(binary, ShardedLayout(layout).global_rules, topology.victoria_metrics_url,
                        topology.url(settings.ports.alertmanager), topology.address(port), settings.evaluation_interval,
                        labels={"stack": "vigil-local"})  # as the shards' alerts carry it (their external label)
    return ComponentSpec("vmalert", argv, topology.url(port), topology.url(port, "/health"), ports=[port],
                         after="victoria-metrics",
                         prepare=await_every_shard(topology.victoria_metrics_url, topology.shards,
                                                   [ShardedLayout(layout).prometheus_config(i) for i in range(topology.shards)]))


def sharded_component_specs(settings: StackSettings, layout: RunLayout, binaries: dict[str, str],
                            backend: GpuBackend) -> list[ComponentSpec]:
    """Components in start order: VictoriaMetrics, the single profile's order with every shard in place of
    its Prometheus and AIOps service, vmalert."""
    topology, sharded = ShardedTopology(settings), ShardedLayout(layout)
    single = {spec.name: spec for spec in component_specs(settings, layout, binaries, backend)}
    shards = range(topology.shards)
    per_shard = {
        # shard 0 last: it scrapes the other shards, which are up by then
        "prometheus": [prometheus_spec(settings, binaries, shard_name("prometheus", i), port, sharded.prometheus_config(i),
                                       sharded.prometheus_data(i), REMOTE_WRITE_FLAGS)
                       for i, port in reversed(list(zip(shards, topology.prometheus_ports())))],
        # learns and scores its shard's nodes; answers questions about the whole fleet from VictoriaMetrics
        "aiops": [aiops_spec(settings, shard_name("aiops", i), port, sharded.aiops_dir(i),
                             topology.url(topology.prometheus_ports()[i]), query_url=topology.victoria_metrics_url)
                  for i, port in zip(shards, topology.aiops_ports())],
        "notifier": [notifier_spec(settings, layout, "notifier", settings.ports.notifier, f"sqlite:///{layout.notifier_db}",
                                   settings.ports.alertmanager, prometheus_url=topology.victoria_metrics_url)],
    }
    # a shard starts once its targets answer (an early scrape would see them down): shard 0, last, once
    # the notifier does (the slowest of the services it scrapes), the others once the GPU exporters do
    gpu = next(name for name in single if name.startswith("gpu-"))
    for spec in per_shard["prometheus"]:
        spec.after = "notifier" if spec.name == shard_name("prometheus", 0) else gpu
    specs = [victoria_metrics_spec(settings, binaries["victoria-metrics"], HaLayout(layout))]
    for name, spec in single.items():
        specs.extend(per_shard.get(name, [spec]))
    return [*specs, vmalert_spec(settings, layout, binaries["vmalert"])]


def backfill_shards(settings: StackSettings, layout: RunLayout, binaries: dict[str, str], node_names: list[str]) -> str:
    """Each shard's TSDB gets the simulated history of its own nodes only (its AIOps service learns them);
    the fleet's history is simulated once, when the first shard needs it, and split by target."""
    topology, sharded = ShardedTopology(settings), ShardedLayout(layout)
    owner = topology.node_shards(node_names)
    end = history_end()
    fleet = functools.cache(lambda: simulated_series(settings, node_names, end))
    said = []
    for shard in range(topology.shards):
        instances = {topology.gpu_address(i) for i, node in enumerate(node_names, start=1) if owner[node] == shard}
        part = (lambda keep=instances: [s for s in fleet() if s[1]["instance"] in keep])
        said.append(f"shard {shard}: " + (backfill_series(settings, layout, binaries, sharded.prometheus_data(shard), end, part)
                                          if instances else "no node hashes to it, nothing to backfill"))
    return "\n".join(said)
