"""Node detail: one node's GPUs side by side (a GPU that differs from its peers stands out), its exporter,
disks and InfiniBand ports, and the jobs it runs. GPU and job series link to their dashboards."""

from __future__ import annotations

from grafana_foundation_sdk.builders.dashboard import Row

from .panels import (BYTES, CELSIUS, COUNT, GPU_JOB, NO_INFINIBAND, NO_PROFILING, NO_XID, PERCENT, SECONDS, WATTS,
                     collapsed_row, dashboard, drill, graph, listing, or_zero, single, variable, xids)

UID = "vigil-node"
GPU_UID, JOB_UID = "vigil-gpu", "vigil-job"
N = 'node="$node"'

_TO_GPU = drill("GPU ${__field.labels.gpu}", GPU_UID, ("node", "gpu"))
_TO_JOB = drill("Job ${__field.labels.job_id}", JOB_UID, ("job_id",))


def _gpu_graph(title: str, metric: str, unit: str, description: str, **kwargs):
    return graph(title, f"{metric}{{{N}}}", unit, description, width=8, links=[_TO_GPU], **kwargs)


def build():
    board = (dashboard(UID, "vigil / Node", "One node: its GPUs compared with each other, its exporter, disks, "
                       "InfiniBand ports and the jobs it runs.", ("node",),
                       incidents_expr='vigil_incident_open{node="$node"}')
             .with_variable(variable("node", "Node", "label_values(vigil_node_gpus_expected, node)")))
    board = (board.with_row(Row("Node $node"))
             .with_panel(single("Exporter up", f'up{{job="{GPU_JOB}", {N}}}', COUNT,
                                "1 when Prometheus scrapes the node's GPU exporter.",
                                thresholds=((None, "red"), (1, "green"))))
             .with_panel(single("GPUs visible / expected",
                                [(f"vigil_node_gpus_visible{{{N}}}", "visible"), (f"vigil_node_gpus_expected{{{N}}}",
                                                                                  "expected")],
                                COUNT, "GPUs the driver sees against those the node should have.", width=6))
             .with_panel(single("Heartbeat age", f"time() - vigil_node_heartbeat_timestamp_seconds{{{N}}}", SECONDS,
                                "Seconds since the node health exporter's last heartbeat.",
                                thresholds=((None, "green"), (120, "red"))))
             .with_panel(single("Exporter collection time", f"vigil_exporter_collection_duration_seconds{{{N}}}",
                                SECONDS, "How long the last collection of the GPU exporter took.", width=5))
             .with_panel(single("Jobs on the node", f"count(count by (job_id) (vigil_gpu_job{{{N}}})) or vector(0)",
                                COUNT, "Jobs holding at least one of the node's GPUs.", width=5)))
    board = (board.with_row(Row("GPUs"))
             .with_panel(_gpu_graph("Utilization", "vigil_gpu_utilization_ratio", PERCENT,
                                    "Each GPU's utilization; click one for the GPU.", minimum=0, maximum=1))
             .with_panel(_gpu_graph("SM active", "vigil_gpu_sm_active_ratio", PERCENT,
                                    "Share of time the SMs had work (DCGM profiling).", minimum=0, maximum=1,
                                    empty=NO_PROFILING))
             .with_panel(_gpu_graph("Tensor pipe active", "vigil_gpu_tensor_pipe_active_ratio", PERCENT,
                                    "Share of cycles the tensor cores were busy (DCGM profiling).", minimum=0,
                                    maximum=1, empty=NO_PROFILING))
             .with_panel(_gpu_graph("Memory used", "vigil_gpu_memory_used_bytes", BYTES, "Framebuffer memory used."))
             .with_panel(_gpu_graph("Power", "vigil_gpu_power_watts", WATTS, "Power drawn by each GPU."))
             .with_panel(graph("Temperature", f'vigil_gpu_temperature_celsius{{{N}, sensor="gpu"}}', CELSIUS,
                               "Die temperature of each GPU.", width=8, links=[_TO_GPU]))
             .with_panel(graph("Clock events", f'sum by (gpu, reason) (vigil_gpu_clock_event_active{{{N}, '
                               f'reason!="gpu_idle"}})', COUNT, "Reasons holding each GPU's clocks down.", width=12,
                               links=[_TO_GPU]))
             .with_panel(graph("XID errors", or_zero(f"sum by (gpu, class) ({xids(f'{{{N}}}')})"), COUNT,
                               "XID errors by GPU and class.", width=12,
                               links=[_TO_GPU], empty=NO_XID)))
    return (board.with_row(Row("Disks and jobs"))
            .with_panel(listing("Disks", [(f"vigil_disk_smart_healthy{{{N}}}", "healthy"),
                                          (f"vigil_disk_temperature_celsius{{{N}}}", "temperature")], COUNT,
                                "SMART health (1 healthy) and temperature of each disk.", width=12))
            .with_panel(listing("Jobs", f"job_node:vigil_gpu_job:count{{{N}}}", COUNT,
                                "Jobs on this node and how many of its GPUs each holds; click one for the job.",
                                width=12, links=[_TO_JOB], empty="no job on this node"))
            .with_row(collapsed_row("InfiniBand", graph(
                "InfiniBand port errors", f"sum by (device, port, counter) (increase("
                f"vigil_infiniband_port_errors_total{{{N}}}[$__rate_interval]))", COUNT,
                "Error counters of the node's InfiniBand ports.", width=24, empty=NO_INFINIBAND))))
