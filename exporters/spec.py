"""Shared types of the exporters package.

`MetricSpec` is the single declaration of a metric that an exporter publishes: collectors build their
metric families from it and `docs/metrics.md` is generated from the same list, so the documentation
cannot drift from the code. `GpuProcess` is what the GPU collector knows about a process on a GPU; job
attribution maps it to a job without touching NVML itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

MetricType = Literal["gauge", "counter", "info"]


@dataclass(frozen=True)
class MetricSpec:
    """One published metric: its full name (with `_total` for counters), type, unit, labels and source."""

    name: str
    type: MetricType
    unit: str  # base unit: "bytes", "seconds", "celsius", "watts", "joules", "hertz", "ratio", "" (count/state)
    labels: tuple[str, ...]
    help: str
    source: str  # where the value comes from, e.g. "nvmlDeviceGetTotalEccErrors", "smartctl --json"


@dataclass(frozen=True)
class GpuProcess:
    """A process that holds a context on a GPU (host PID as NVML reports it)."""

    node: str
    gpu: int
    uuid: str
    pid: int
    used_memory_bytes: int | None = None
