"""The capacity table: from the figures measured on one machine to shards, memory and disk for a fleet.

Pure arithmetic, so the table can be checked by hand:

- shards = ceil(GPUs / GPUs one Prometheus held with every rule group under 1 s);
- memory per shard = resident bytes per head series (measured) x head series per GPU x GPUs per shard;
- VictoriaMetrics disk per day = bytes per stored sample (measured) x samples per GPU per second x GPUs
  x 86,400.

A row beyond the largest fleet actually measured is an extrapolation and says so.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

DAY_S = 86_400
DEFAULT_SIZES = (1_000, 10_000, 25_000, 50_000, 100_000)


@dataclass(frozen=True)
class Measured:
    """What the bench measured; every capacity row is computed from these five figures."""

    gpus_per_shard: int  # the largest fleet (GPUs) one Prometheus held within the rule-time limit
    series_per_gpu: float  # Prometheus head series / GPUs
    rss_mib_per_series: float  # Prometheus resident MiB / head series
    samples_per_gpu_s: float  # samples ingested per second per GPU (one copy, no replicas)
    vm_bytes_per_sample: float  # VictoriaMetrics bytes on disk per stored sample
    largest_measured_gpus: int  # the largest fleet actually run


@dataclass(frozen=True)
class Row:
    gpus: int
    shards: int
    memory_mib_per_shard: float
    vm_gib_per_day: float
    extrapolated: bool


def capacity_rows(measured: Measured, sizes: tuple[int, ...] = DEFAULT_SIZES) -> list[Row]:
    if measured.gpus_per_shard < 1:
        raise ValueError("no fleet size passed the 1 s rule-group limit: no per-shard capacity to scale")
    rows = []
    for gpus in sorted(set(sizes)):
        shards = math.ceil(gpus / measured.gpus_per_shard)
        memory = measured.rss_mib_per_series * measured.series_per_gpu * gpus / shards
        disk = measured.vm_bytes_per_sample * measured.samples_per_gpu_s * gpus * DAY_S / 2**30
        rows.append(Row(gpus, shards, memory, disk, gpus > measured.largest_measured_gpus))
    return rows


def capacity_table(measured: Measured, sizes: tuple[int, ...] = DEFAULT_SIZES) -> list[str]:
    """The rows as a Markdown table; extrapolated rows are labelled `extrapolation`."""
    lines = ["| GPUs | Prometheus shards | memory per shard | VictoriaMetrics disk per day | basis |",
             "|---|---|---|---|---|"]
    for row in capacity_rows(measured, sizes):
        basis = "extrapolation" if row.extrapolated else "measured range"
        lines.append(f"| {row.gpus:,} | {row.shards} | {row.memory_mib_per_shard:,.0f} MiB | "
                     f"{row.vm_gib_per_day:,.1f} GiB | {basis} |")
    return lines
