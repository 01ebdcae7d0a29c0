"""The sharded profile (`vigil up --profile sharded --shards N`): N Prometheus shards splitting the GPU
node targets with `hashmod` (`sharding.sharded_config`), one AIOps service per shard, VictoriaMetrics as
the global store and vmalert evaluating the global rules over it (docs/scaling.md, "Sharded topology").

Shard 0 is the single profile's Prometheus and AIOps service (same names, ports and files), so the
commands that talk to "the" Prometheus keep working on shard 0's part; shard i (1 … N-1) is
`prometheus-i` and `aiops-i`. The extra components take the top of the port range, which the simulated
nodes leave free in this profile (settings.SHARDED_PORTS):

    port_base+99 … 99-(N-2)   prometheus-1 … prometheus-(N-1)
    port_base+95 … 95-(N-2)   aiops-1 … aiops-(N-1)
    port_base+91              victoria-metrics (the ha profile's port: the same spec serves both)
    port_base+90              vmalert

Where each job is scraped (the shard label of every series says which shard holds it):
- the GPU nodes: hashmod of the target address, each by exactly one shard (`sharding.shard_of`);
- node_exporter (this host, labelled with its name) and the node health exporter (the simulated disks of
  the first GPU node): by the shard of that node's GPU target, so node-keyed rules find every series of
  the node on one shard;
- AIOps service i: by shard i only, beside the nodes it learned and scores (the baseline rules join
  its bands to the node series on the shard);
- the stack's own services (every shard, Alertmanager, notifier, VictoriaMetrics): shard 0. vmalert is
  nobody's target: it starts last, once the shards' samples reach VictoriaMetrics (a scrape before
  would see it down), and the Watchdog it evaluates is its liveness check (the notifier's heartbeat pages
  when the Watchdog stops arriving).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from vigil.aiops.disk import METADATA_FILE, MODEL_FILE

from vigil.stack.settings import StackSettings
from vigil.stack.config.ha import HaLayout, TopPorts
from vigil.stack.config.ha_prometheus import REMOTE_WRITE_DEADLINE
from vigil.stack.config.layout import RunLayout
from vigil.stack.config.prometheus import GPU_JOB, NODE_EXPORTER_JOB, NODE_HEALTH_JOB, prometheus_config
from vigil.stack.config.sharding import shard_of, sharded_config

AIOPS_JOB = "vigil-aiops"
HOST_NODE_JOBS = (NODE_EXPORTER_JOB, NODE_HEALTH_JOB)


def shard_name(kind: str, shard: int) -> str:
    """`prometheus` for shard 0 (the single profile's name), `prometheus-1` … for the others."""
    return kind if shard == 0 else f"{kind}-{shard}"


@dataclass(frozen=True)
class ShardedTopology(TopPorts):
    """Ports and URLs of every shard's components (see the module's table)."""

    @property
    def shards(self) -> int:
        return self.settings.shards

    def prometheus_ports(self) -> list[int]:
        return [self.settings.ports.prometheus, *(self._top - i for i in range(self.shards - 1))]

    def aiops_ports(self) -> list[int]:
        return [self.settings.ports.aiops, *(self._top - 4 - i for i in range(self.shards - 1))]

    @property
    def vmalert_port(self) -> int:
        return self._top - 9

    def gpu_address(self, index: int) -> str:
        """The scrape address of GPU node `index` (1-based), the value `hashmod` hashes."""
        return self.address(self.settings.ports.gpu_node(index))

    def node_shards(self, node_names: list[str]) -> dict[str, int]:
        """{node: the shard that scrapes its GPU target}."""
        return {node: shard_of(self.gpu_address(i), self.shards) for i, node in enumerate(node_names, start=1)}

    @property
    def host_shard(self) -> int:
        """The shard of the host node (the first GPU node), which also scrapes node_exporter and node health."""
        return shard_of(self.gpu_address(1), self.shards)


@dataclass(frozen=True)
class ShardedLayout:
    """Where shard i keeps its files; shard 0 uses the single profile's `RunLayout` paths."""

    layout: RunLayout

    def prometheus_config(self, shard: int) -> Path:
        return self.layout.prometheus_config if shard == 0 else self.layout.root / f"prometheus-{shard}" / "prometheus.yml"

    def prometheus_data(self, shard: int) -> Path:
        return self.layout.prometheus_data if shard == 0 else self.layout.root / f"prometheus-{shard}" / "data"

    def aiops_dir(self, shard: int) -> Path:
        return self.layout.aiops_dir if shard == 0 else self.layout.root / f"aiops-{shard}"

    @property
    def global_rules(self) -> Path:
        """The rules vmalert evaluates over VictoriaMetrics (the shards' rule file holds the others)."""
        return self.layout.root / "vmalert" / "global-rules.yml"

    def data_dirs(self, shards: int) -> list[Path]:
        return [*(self.prometheus_data(i) for i in range(1, shards)), *(self.aiops_dir(i) for i in range(1, shards)),
                self.global_rules.parent, HaLayout(self.layout).victoria_metrics_data]


def link_disk_model(layout: RunLayout, shards: int) -> None:
    """The disk failure model is trained once (the `train-disk-model` job), into shard 0's AIOps directory:
    every other AIOps service sees it through links (dangling until it is trained), so whichever shard
    holds the host node's SMART series scores its disks with it."""
    sharded = ShardedLayout(layout)
    for shard in range(1, shards):
        for name in (MODEL_FILE, METADATA_FILE):
            link = sharded.aiops_dir(shard) / name
            if not link.is_symlink() and not link.exists():
                link.symlink_to(layout.aiops_dir / name)


def _job(name: str, addresses: list[str]) -> dict:
    return {"job_name": name, "static_configs": [{"targets": addresses}]}


def shard_prometheus_config(settings: StackSettings, layout: RunLayout, node_names: list[str], shard: int) -> dict:
    """`prometheus.yml` of shard `shard` (0-based)."""
    topology = ShardedTopology(settings)
    doc = prometheus_config(settings, layout, node_names)  # a fresh document: changed in place
    jobs = {job["job_name"]: job for job in doc["scrape_configs"]}
    host_jobs = [jobs.pop(name) for name in HOST_NODE_JOBS if name in jobs]
    aiops = jobs.pop(AIOPS_JOB, None)
    jobs["prometheus"]["static_configs"][0]["targets"] = [topology.address(p) for p in topology.prometheus_ports()]
    doc["scrape_configs"] = [*jobs.values(),
                             _job("victoria-metrics", [topology.address(topology.victoria_metrics_port)])]
    doc = sharded_config(doc, topology.shards, shard, {GPU_JOB})
    if shard == topology.host_shard:
        doc["scrape_configs"].extend(host_jobs)
    if aiops is not None:  # this shard's own AIOps service, node labels kept (honor_labels)
        aiops["static_configs"][0]["targets"] = [topology.address(topology.aiops_ports()[shard])]
        doc["scrape_configs"].append(aiops)
    doc["remote_write"] = [{"url": topology.remote_write_url, "name": "victoria-metrics",
                            "queue_config": {"batch_send_deadline": REMOTE_WRITE_DEADLINE}}]
    return doc
