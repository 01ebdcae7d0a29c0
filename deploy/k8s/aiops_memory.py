"""How much memory an AIOps Deployment gets: from the curve `bench/aiops/train_memory.py` measured, never
guessed. The base and both overlays size their AIOps containers with `aiops_resources`; the capacity
table (`bench/scaling/capacity.py`) reads `aiops_memory_mib`."""

from __future__ import annotations

import math

from .meta import resources

BASE_FLEET_GPUS = 1_000  # the base (and the small overlay) is sized for one Prometheus pair of up to ~1,000 GPUs

# `vigil aiops serve`'s peak resident memory (MiB) when it trains at start on N GPU series of 14 days from
# Prometheus, start-up training included: `bench/aiops/train_memory.py` (docs/benchmarks.md, section
# aiops-train-memory, 2 cores, 2026-12-07 00:44 UTC; one question asked, so the Text2PromQL catalog is in).
# It grows with the series (about 33 KiB each past 5,000: the models), not with their 14 days of history.
AIOPS_PEAK_MIB = ((72, 189.0), (712, 207.0), (2_000, 241.0), (5_000, 349.0), (10_000, 510.0))
AIOPS_HEADROOM = 1.5  # the limit over the measured peak: Python's heap fragments over hourly refits
AIOPS_EXTRAPOLATED_HEADROOM = 2.0  # past the last point measured, the curve is a straight-line guess


def aiops_memory_mib(series: int) -> float:
    """The AIOps service's peak on `series` GPU series: the measured curve, interpolated between its points
    and extended along its last segment beyond them (an extrapolation past the last point)."""
    points = sorted(AIOPS_PEAK_MIB)
    if series <= points[0][0]:
        return points[0][1]
    segments = list(zip(points, points[1:]))
    (n0, m0), (n1, m1) = next((s for s in segments if series <= s[1][0]), segments[-1])
    return m0 + (m1 - m0) * (series - n0) / (n1 - n0)


def aiops_headroom(series: int) -> float:
    return AIOPS_HEADROOM if series <= max(n for n, _ in AIOPS_PEAK_MIB) else AIOPS_EXTRAPOLATED_HEADROOM


def aiops_resources(gpus_per_shard: int) -> dict:
    """An AIOps Deployment's requests and limits for a shard of `gpus_per_shard` GPUs (one series each):
    memory = the measured peak x `aiops_headroom` (more past the last point measured), rounded up to
    256 MiB (request = limit: a pod is not killed for what it was promised)."""
    memory = 256 * math.ceil(aiops_memory_mib(gpus_per_shard) * aiops_headroom(gpus_per_shard) / 256)
    quantity = f"{memory // 1024}Gi" if memory % 1024 == 0 else f"{memory}Mi"
    return resources("500m" if gpus_per_shard <= 2_000 else "1000m", quantity)
