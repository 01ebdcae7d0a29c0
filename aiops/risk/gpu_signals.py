"""Read the GPU exporter's series from Prometheus and turn them into `GpuSignals` per GPU."""

from __future__ import annotations

import math

from vigil.aiops.risk.gpu_score import GpuSignals
from vigil.common.prometheus_api import PrometheusClient

# field of GpuSignals -> PromQL giving one value per (node, gpu); `{xid_window}` is filled in
GPU_QUERIES: dict[str, str] = {
    "corrected_ecc_per_hour": (
        'max by (node, gpu) (rate(vigil_gpu_ecc_errors_total{error_type="corrected"}[1h])) * 3600'
    ),
    "remap_pending": "max by (node, gpu) (vigil_gpu_remap_pending)",
    "remap_failure": "max by (node, gpu) (vigil_gpu_remap_failure)",
    "xid_92_94_count": 'sum by (node, gpu) (increase(vigil_gpu_xid_errors_total{xid=~"92|94"}[{xid_window}]))',
    "recovery_action": "max by (node, gpu) (vigil_gpu_recovery_action)",
    "temperature_c": 'max by (node, gpu) (vigil_gpu_temperature_celsius{sensor="gpu"})',
    # the load the temperature follows (with minutes of thermal lag): peers are compared at a similar load
    "utilization": "max by (node, gpu) (avg_over_time(vigil_gpu_utilization_ratio[5m]))",
    "utilization_now": "max by (node, gpu) (vigil_gpu_utilization_ratio)",
}
# every GPU the exporter knows, so that GPUs without any precursor still get a (low) risk
GPU_INVENTORY_QUERY = "max by (node, gpu) (vigil_gpu_up)"


def read_gpu_signals(reader: PrometheusClient, xid_window: str = "7d") -> list[GpuSignals]:
    """One `GpuSignals` per GPU seen in any of the queries, sorted by (node, gpu)."""
    gpus: dict[tuple[str, str], GpuSignals] = {}

    def entry(labels: dict[str, str]) -> GpuSignals | None:
        node, gpu = labels.get("node"), labels.get("gpu")
        if node is None or gpu is None:
            return None
        return gpus.setdefault((node, gpu), GpuSignals(node=node, gpu=gpu))

    for labels, _ in reader.query(GPU_INVENTORY_QUERY):
        entry(labels)
    for field_name, promql in GPU_QUERIES.items():
        for labels, value in reader.query(promql.replace("{xid_window}", xid_window)):
            signals = entry(labels)
            if signals is not None and not math.isnan(value):  # no sample is better than a NaN one
                setattr(signals, field_name, value)
    return [gpus[key] for key in sorted(gpus)]

