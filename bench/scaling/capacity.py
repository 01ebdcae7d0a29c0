"""The capacity table: from the figures measured on one machine to shards, memory and disk for a fleet.

Pure arithmetic, so the table can be checked by hand:

- series per GPU = the GPU exporter's and the rules' head series per GPU (measured) + the series each node's
  node_exporter and node-health exporter add (measured, `steady_store.py`) / GPUs per node;
- shards = ceil(GPUs / GPUs one Prometheus held with every rule group under 1 s);
- memory per shard = resident bytes per head series (measured) x series per GPU x GPUs per shard;
- VictoriaMetrics disk per day = bytes per stored sample (measured; once merged when `steady_store.py` ran)
  x samples per GPU per second (the fleet's, measured, + the node series' at one per scrape) x GPUs x 86,400;
- VictoriaMetrics memory = its resident bytes per series at the measured size x the fleet's series;
- AIOps memory per shard = the AIOps service's peak at one series per GPU of the shard
  (`vigil.deploy.k8s.aiops_memory.aiops_memory_mib`, the curve `bench/aiops/train_memory.py` measured).

A row beyond the largest fleet actually measured is an extrapolation and says so.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from vigil.deploy.k8s.aiops_memory import aiops_memory_mib

DAY_S = 86_400
DEFAULT_SIZES = (1_000, 10_000, 25_000, 50_000, 100_000)


@dataclass(frozen=True)
class Measured:
    """What the benches measured; every capacity row is computed from these figures."""

    gpus_per_shard: int  # the largest fleet (GPUs) one Prometheus held within the rule-time limit
    series_per_gpu: float  # Prometheus head series / GPUs (the GPU exporter's and the rules')
    rss_mib_per_series: float  # Prometheus resident MiB / head series
    samples_per_gpu_s: float  # samples ingested per second per GPU (one copy, no replicas)
    vm_bytes_per_sample: float  # VictoriaMetrics bytes on disk per stored sample
    largest_measured_gpus: int  # the largest fleet actually run
    node_series: float = 0.0  # series one node's node_exporter and node-health exporter add
    gpus_per_node: int = 8
    scrape_s: float = 15.0
    vm_rss_mib_per_series: float = 0.0  # VictoriaMetrics resident MiB / series it held (0: not measured)

    @property
    def all_series_per_gpu(self) -> float:
        return self.series_per_gpu + self.node_series / self.gpus_per_node

    @property
    def all_samples_per_gpu_s(self) -> float:
        return self.samples_per_gpu_s + self.node_series / self.gpus_per_node / self.scrape_s


@dataclass(frozen=True)
class Row:
    gpus: int
    shards: int
    memory_mib_per_shard: float
    vm_gib_per_day: float
    extrapolated: bool
    aiops_mib_per_shard: float
    vm_memory_mib: float


def capacity_rows(measured: Measured, sizes: tuple[int, ...] = DEFAULT_SIZES) -> list[Row]:
    if measured.gpus_per_shard < 1:
        raise ValueError("no fleet size passed the 1 s rule-group limit: no per-shard capacity to scale")
    rows = []
    for gpus in sorted(set(sizes)):
        shards = math.ceil(gpus / measured.gpus_per_shard)
        memory = measured.rss_mib_per_series * measured.all_series_per_gpu * gpus / shards
        disk = measured.vm_bytes_per_sample * measured.all_samples_per_gpu_s * gpus * DAY_S / 2**30
        rows.append(Row(gpus, shards, memory, disk, gpus > measured.largest_measured_gpus,
                        aiops_memory_mib(math.ceil(gpus / shards)),
                        measured.vm_rss_mib_per_series * measured.all_series_per_gpu * gpus))
    return rows


def capacity_table(measured: Measured, sizes: tuple[int, ...] = DEFAULT_SIZES) -> list[str]:
    """The rows as a Markdown table; extrapolated rows are labelled `extrapolation`."""
    lines = ["| GPUs | Prometheus shards | memory per shard | AIOps memory per shard | VictoriaMetrics memory "
             "| VictoriaMetrics disk per day | basis |", "|---|---|---|---|---|---|---|"]
    for row in capacity_rows(measured, sizes):
        basis = "extrapolation" if row.extrapolated else "measured range"
        vm_memory = f"{row.vm_memory_mib:,.0f} MiB" if measured.vm_rss_mib_per_series else "not measured"
        lines.append(f"| {row.gpus:,} | {row.shards} | {row.memory_mib_per_shard:,.0f} MiB | "
                     f"{row.aiops_mib_per_shard:,.0f} MiB | {vm_memory} | {row.vm_gib_per_day:,.1f} GiB | {basis} |")
    return lines
