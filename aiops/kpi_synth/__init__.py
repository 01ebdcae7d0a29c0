"""A labelled synthetic KPI benchmark: minute-level operations curves with injected anomalies.

Three curve classes (periodic, stable, unstable) × six anomaly kinds (spikes, dips, level shifts,
variance changes, trend changes, missing data), a few series each, every one from a fixed seed, so the
benchmark is the same on every machine. The series split into two halves by seed: settings are chosen
on `tune` and reported on `heldout`. Scoring (`scoring.py`) is point-adjusted F1 with a 7-point delay
rule, reported next to the strict point-wise F1.
"""

from vigil.aiops.kpi_synth.generate import ANOMALY_KINDS, CURVE_CLASSES, HALVES, KpiSeries, make_benchmark
from vigil.aiops.kpi_synth.scoring import Counts, point_adjusted_counts, segments, strict_counts

__all__ = ["ANOMALY_KINDS", "CURVE_CLASSES", "HALVES", "Counts", "KpiSeries", "make_benchmark",
           "point_adjusted_counts", "segments", "strict_counts"]
