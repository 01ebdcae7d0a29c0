"""Job detail: a job's performance derived from the hardware metrics joined with `vigil_gpu_job` (which
GPUs the job holds, from the exporter's attribution) on node and GPU, so every value is the job's while it
held the GPU: utilization, profiling activity, memory, power, throttling and XIDs."""

from __future__ import annotations

from grafana_foundation_sdk.builders.dashboard import Row

from .fleet import THROTTLE_REASONS
from .panels import (BYTES, COUNT, NO_PROFILING, NO_XID, PERCENT, WATTS, dashboard, drill, graph, listing, or_zero,
                     profiling, single, variable, xids)

UID = "vigil-job"
GPU_UID = "vigil-gpu"
HELD = 'vigil_gpu_job{job_id="$job_id"}'

_TO_GPU = drill("GPU ${__field.labels.node}/${__field.labels.gpu}", GPU_UID, ("node", "gpu"))


def on_job(expr: str) -> str:
    """`expr` (per GPU, with node and gpu labels) restricted to the GPUs the job holds, with its labels."""
    return f"{HELD} * on (node, gpu) group_left () ({expr})"


def build():
    board = (dashboard(UID, "vigil / Job", "One training job: its GPUs' hardware metrics while it held them "
                       "(joined with vigil_gpu_job on node and GPU).", ("job",),
                       # the job's own incidents, and those of the GPUs it holds (a GPU's alert names no job)
                       incidents_expr='vigil_incident_open{job_id="$job_id"} or (vigil_incident_open and on (node, gpu) '
                                      'vigil_gpu_job{job_id="$job_id"})')
             .with_variable(variable("job_id", "Job", "label_values(vigil_gpu_job, job_id)")))
    board = (board.with_row(Row("Job $job_id"))
             .with_panel(listing("Job", 'vigil_job_info{job_id="$job_id"}', COUNT,
                                 "Source (Slurm, Kubernetes), team (tenant) and user.", width=12, height=4))
             .with_panel(single("GPUs", f"count({HELD})", COUNT, "GPUs the job holds now."))
             .with_panel(single("Nodes", f"count(count by (node) ({HELD}))", COUNT, "Nodes the job spans."))
             .with_panel(single("Average utilization", 'job:vigil_gpu_utilization:avg{job_id="$job_id"}', PERCENT,
                                "Average utilization of the job's GPUs (recording rule).",
                                thresholds=((None, "red"), (0.05, "orange"), (0.5, "green")))))
    board = (board.with_row(Row("Performance"))
             .with_panel(graph("Utilization and profiling", profiling(lambda metric: f"avg({on_job(metric)})"), PERCENT,
                 "Averages over the job's GPUs: a job at 100 % utilization and little tensor activity wastes the GPUs.",
                 minimum=0, maximum=1))
             .with_panel(graph("Utilization by GPU", on_job("vigil_gpu_utilization_ratio"), PERCENT,
                               "Each GPU of the job: a straggler or an idle GPU stands out; click it for the GPU.",
                               links=[_TO_GPU], minimum=0, maximum=1))
             .with_panel(graph("Memory used by GPU", on_job("vigil_gpu_memory_used_bytes"), BYTES,
                               "Framebuffer memory each of the job's GPUs uses.", width=8, links=[_TO_GPU]))
             .with_panel(graph("Power", f"sum({on_job('vigil_gpu_power_watts')})", WATTS,
                               "Power drawn by all the job's GPUs.", width=8))
             .with_panel(graph("Tensor pipe active by GPU", on_job("vigil_gpu_tensor_pipe_active_ratio"), PERCENT,
                               "Tensor-core activity of each GPU of the job (DCGM profiling).", width=8,
                               links=[_TO_GPU], minimum=0, maximum=1, empty=NO_PROFILING)))
    throttled = on_job(f'max by (node, gpu) (vigil_gpu_clock_event_active{{reason=~"{THROTTLE_REASONS}"}})')
    job_xids = on_job(f"sum by (node, gpu) ({xids()})")
    return (board.with_row(Row("Trouble while the job ran"))
            .with_panel(graph("GPUs throttled", f"sum({throttled})", COUNT,
                              "How many of the job's GPUs a power cap, thermal or hardware slowdown held back.",
                              width=8))
            .with_panel(graph("XID errors", or_zero(f"sum by (node, gpu) ({job_xids})"), COUNT,
                              "XID errors on the job's GPUs while it held them.", width=8, links=[_TO_GPU],
                              empty=NO_XID))
            .with_panel(listing("GPUs of the job", HELD, COUNT, "Node, GPU and UUID of each GPU the job holds.",
                                width=8, links=[_TO_GPU])))
