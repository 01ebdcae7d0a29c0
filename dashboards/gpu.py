"""GPU detail: one GPU's identity, how busy it really is, its memory, power, heat and clocks, every error
counter the exporters read, and the jobs that held it (linking to the job's dashboard)."""

from __future__ import annotations

from grafana_foundation_sdk.builders.dashboard import Row
from grafana_foundation_sdk.models import common

from .panels import (BYTES, CELSIUS, COUNT, HERTZ, NO_XID, PERCENT, WATTS, dashboard, drill, graph, listing, profiling,
                     or_zero, single, variable, xids)

UID = "vigil-gpu"
NODE_UID, JOB_UID = "vigil-node", "vigil-job"
G = 'node="$node", gpu=~"$gpu"'  # $gpu is multi-select: one GPU, several to compare, or All

# the newest XID series by its last time (NVML), else DCGM's last code made a label: "XID 79" either way
LAST_XID = (f"topk(1, vigil_gpu_xid_last_seen_timestamp_seconds{{{G}}}) "
            f"or on () count_values(\"xid\", vigil_gpu_last_xid_code{{{G}}} > 0)")

_TO_JOB = drill("Job ${__field.labels.job_id}", JOB_UID, ("job_id",))
_TO_NODE = drill("Node ${__field.labels.node}", NODE_UID, ("node",))


def _increase(metric: str, by: str) -> str:
    return f"sum by ({by}) (increase({metric}{{{G}}}[$__rate_interval]))"


def build():
    board = (dashboard(UID, "vigil / GPU", "One GPU: identity, real activity, memory, power, heat, clocks, errors "
                       "and the jobs that held it.", ("gpu",),
                       incidents_expr='vigil_incident_open{node="$node", gpu=~"$gpu|"}')  # and its node's
             .with_variable(variable("node", "Node", "label_values(vigil_gpu_up, node)"))
             .with_variable(variable("gpu", "GPU", 'label_values(vigil_gpu_up{node="$node"}, gpu)', multi=True)))
    board = (board.with_row(Row("GPU $gpu on $node"))
             .with_panel(listing("Identity", f"vigil_gpu_info{{{G}}}", COUNT,
                                 "Model, UUID, serial, PCI bus, driver and CUDA versions.", width=12, height=4,
                                 links=[_TO_NODE]))
             .with_panel(single("Up", f"vigil_gpu_up{{{G}}}", COUNT, "1 while the exporter reads the GPU.",
                                thresholds=((None, "red"), (1, "green"))))
             .with_panel(single("Last XID", [(LAST_XID, "XID {{xid}}")], COUNT,
                                "The XID the GPU reported last: by its per-XID time (NVML exporter) or its "
                                "last XID code (DCGM). Empty: none since the exporter started.",
                                thresholds=((None, "orange"),), empty="none")
                         .text_mode(common.BigValueTextMode.NAME))
             .with_panel(single("Jobs", f"count(vigil_gpu_job{{{G}}}) or vector(0)", COUNT,
                                "Jobs holding the GPU now.")))
    board = (board.with_row(Row("Activity"))
             .with_panel(graph("Utilization and profiling", profiling(lambda metric: f"{metric}{{{G}}}")
                               + [(f"vigil_gpu_sm_occupancy_ratio{{{G}}}", "SM occupancy")], PERCENT,
                 "Utilization beside the DCGM profiling metrics, which say how much of the GPU the kernels use.",
                 minimum=0, maximum=1))
             .with_panel(graph("Memory", [(f"vigil_gpu_memory_used_bytes{{{G}}}", "used"),
                                          (f"vigil_gpu_memory_total_bytes{{{G}}}", "total")], BYTES,
                               "Framebuffer memory used against the total."))
             .with_panel(graph("Power", [(f"vigil_gpu_power_watts{{{G}}}", "drawn"),
                                         (f"vigil_gpu_power_limit_watts{{{G}}}", "limit")], WATTS,
                               "Power drawn against the enforced limit.", width=8))
             .with_panel(graph("Temperature", f"vigil_gpu_temperature_celsius{{{G}}}", CELSIUS,
                               "Die (sensor=gpu) and HBM (sensor=memory) temperature.", width=8))
             .with_panel(graph("Clocks", f"vigil_gpu_clock_hertz{{{G}}}", HERTZ, "SM and memory clocks.", width=8)))
    return (board.with_row(Row("Throttling and errors"))
            .with_panel(graph("Clock events", f'vigil_gpu_clock_event_active{{{G}, reason!="gpu_idle"}}', COUNT,
                              "1 while a reason (power cap, thermal, hardware slowdown) holds the clocks down.",
                              width=8))
            .with_panel(graph("XID errors", or_zero(f"sum by (xid, class) ({xids(f'{{{G}}}')})"), COUNT,
                              "XID errors by code and class.", width=8, empty=NO_XID))
            .with_panel(graph("ECC errors", _increase("vigil_gpu_ecc_errors_total", "error_type, counter_type"),
                              COUNT, "Corrected and uncorrected ECC errors.", width=8))
            .with_panel(graph("Row remapping and retired pages", [
                (f"vigil_gpu_remap_pending{{{G}}}", "remap pending"),
                (f"vigil_gpu_remap_failure{{{G}}}", "remap failed"),
                (f"vigil_gpu_retired_pages_pending{{{G}}}", "retired pages pending")], COUNT,
                "Memory repairs waiting for a GPU reset, or failed: the GPU needs attention.", width=8))
            .with_panel(graph("NVLink and PCIe", [
                (_increase("vigil_gpu_nvlink_errors_total", "error_type"), "NVLink {{error_type}}"),
                (_increase("vigil_gpu_pcie_replays_total", "gpu"), "PCIe replays")], COUNT,
                "Interconnect errors: NVLink by type, PCIe replays.", width=8))
            .with_panel(listing("Jobs on this GPU", f"vigil_gpu_job{{{G}}}", COUNT,
                                "The jobs holding the GPU now; click one for the job's view.", width=8,
                                links=[_TO_JOB], empty="no job holds this GPU")))
