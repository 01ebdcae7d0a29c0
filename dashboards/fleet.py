"""Fleet overview: is the fleet healthy, is it busy (really busy: the profiling view beside the
utilization), what is breaking, and who holds which GPUs. Every GPU, node and job series links down to
its own dashboard."""

from __future__ import annotations

from grafana_foundation_sdk.builders.dashboard import Row

from .panels import (BYTES, CELSIUS, COUNT, GPU_HOURS, GPU_JOB, NO_XID, PERCENT, SECONDS, WATTS, dashboard, drill, graph,
                     heat, joined, listing, or_zero, profiling, single, xids)

UID = "vigil-fleet"
NODE_UID, GPU_UID, JOB_UID = "vigil-node", "vigil-gpu", "vigil-job"

# clock-event reasons that mean the GPU is held back (gpu_idle and the application clock setting are not)
THROTTLE_REASONS = "sw_power_cap|hw_slowdown|sw_thermal|hw_thermal|hw_power_brake|sync_boost"
IDLE_BELOW = 0.05  # an allocated GPU under 5 % utilization counts as idle

_TO_NODE = drill("Node ${__field.labels.node}", NODE_UID, ("node",))
_TO_GPU = drill("GPU ${__field.labels.node}/${__field.labels.gpu}", GPU_UID, ("node", "gpu"))
_TO_JOB = drill("Job ${__field.labels.job_id}", JOB_UID, ("job_id",))
_JOB_TEAM = "max by (job_id, tenant) (vigil_job_info)"


def _health(board):
    red_when_any = ((None, "green"), (1, "red"))
    return (board.with_row(Row("Health"))
            .with_panel(single("GPUs healthy", "sum(vigil_gpu_up)", COUNT,
                               "GPUs the exporters read successfully (vigil_gpu_up == 1)."))
            .with_panel(single("GPUs lost", "sum(clamp_min(vigil_node_gpus_expected - vigil_node_gpus_visible, 0))",
                               COUNT, "GPUs a node should have but the driver no longer sees (fell off the bus).",
                               thresholds=red_when_any))
            .with_panel(single("GPUs throttled",
                               f'count(max by (node, gpu) (vigil_gpu_clock_event_active{{reason=~"{THROTTLE_REASONS}"}}) == 1)'
                               " or vector(0)", COUNT,
                               "GPUs whose clocks a power cap, thermal or hardware slowdown holds down now.",
                               thresholds=((None, "green"), (1, "orange"))))
            .with_panel(single("Nodes down", f'count(up{{job="{GPU_JOB}"}} == 0) or vector(0)', COUNT,
                               "GPU nodes whose exporter Prometheus cannot scrape.", thresholds=red_when_any))
            .with_panel(single("XID errors", f"sum({xids(window='$__range')}) or vector(0)", COUNT,
                               "XID errors the drivers reported in the dashboard's time range.",
                               thresholds=((None, "green"), (1, "orange"))))
            .with_panel(single("Firing alerts", 'sum by (severity) (ALERTS{alertstate="firing"})', COUNT,
                               "Alerts firing now, by severity.")))


def _usage(board):
    return (board.with_row(Row("Utilization: busy or really busy"))
            .with_panel(graph("Fleet utilization and profiling", profiling(lambda metric: f"avg({metric})"), PERCENT,
                "Utilization says a kernel was running; SM and tensor-pipe activity (DCGM profiling, when the "
                "backend provides it) say how much of the GPU it used.", minimum=0, maximum=1))
            .with_panel(graph("GPU utilization by node", "avg by (node) (vigil_gpu_utilization_ratio)", PERCENT,
                              "Average utilization of each node's GPUs; click a series for the node.",
                              links=[_TO_NODE], minimum=0, maximum=1))
            .with_panel(graph("GPU memory", [("sum(vigil_gpu_memory_used_bytes)", "used"),
                                             ("sum(vigil_gpu_memory_total_bytes)", "total")], BYTES,
                              "Framebuffer memory used across the fleet.", width=8))
            .with_panel(graph("Power", [("sum(vigil_gpu_power_watts)", "drawn"),
                                        ("sum(vigil_gpu_power_limit_watts)", "limit")], WATTS,
                              "Power drawn by all GPUs against the sum of their limits.", width=8))
            .with_panel(heat("GPU temperature", 'vigil_gpu_temperature_celsius{sensor="gpu"}', CELSIUS,
                             "How many GPUs sit at each die temperature over time: a hot tail is a cooling problem.",
                             width=8)))


def _errors(board):
    return (board.with_row(Row("Errors"))
            .with_panel(graph("XID errors by class",
                              or_zero(f"sum by (class) ({xids()})"), COUNT,
                              "XID errors by class: critical (hardware), warning, application, unknown.",
                              stacked=True, empty=NO_XID))
            .with_panel(graph("ECC errors by type",
                              "sum by (error_type, counter_type) (increase(vigil_gpu_ecc_errors_total[$__rate_interval]))",
                              COUNT, "Corrected (single-bit) and uncorrected (double-bit) ECC errors.", stacked=True))
            .with_panel(listing("GPUs with errors now",
                                f"sum by (node, gpu) ({xids(window='$__range')}) > 0", COUNT,
                                "GPUs that reported an XID in the time range; click one for its detail.",
                                links=[_TO_GPU], empty="none: no GPU reported an XID")))


def _jobs(board):
    allocated = f"vigil_gpu_job * on (job_id) group_left (tenant) {_JOB_TEAM}"
    idle = (f"(job_gpu:vigil_gpu_utilization:ratio < {IDLE_BELOW}) * on (job_id) group_left (tenant) {_JOB_TEAM}")
    return (board.with_row(Row("Jobs and teams"))
            .with_panel(graph("GPUs allocated by team", f"count by (tenant) ({allocated})", COUNT,
                              "GPUs held by the jobs of each team (vigil_gpu_job joined with vigil_job_info).",
                              stacked=True, width=8))
            # every team holding GPUs reads 0 idle when none is: a count of nothing is 0, not "No data"
            .with_panel(graph("Allocated GPUs idle by team",
                              f"count by (tenant) ({idle}) or count by (tenant) ({allocated}) * 0", COUNT,
                              f"GPUs a job holds that run under {IDLE_BELOW:.0%} utilization: capacity paid for, unused "
                              "(0 for a team whose GPUs all compute).",
                              stacked=True, width=8))
            .with_panel(graph("GPUs allocated vs. idle", [
                ("count(vigil_gpu_job)", "allocated"),
                (f"count(job_gpu:vigil_gpu_utilization:ratio < {IDLE_BELOW}) or vector(0)", "allocated, idle"),
                ("sum(vigil_gpu_up)", "healthy")], COUNT, "The fleet's GPUs, those jobs hold, and those idle in a job.",
                width=8))
            .with_panel(joined("Jobs", "job_id", [
                ("sum by (job_id) (job_node:vigil_gpu_job:count)", "GPUs"),
                ("max by (job_id, tenant, user) (vigil_job_info)", ""),  # the owner's labels, its value hidden
                ("job:vigil_gpu_utilization:avg", "average utilization")], COUNT,
                "Each running job, one row: its GPUs, its owner (tenant, user) and its average utilization; "
                "click one for the job's view.", width=24,
                links=[drill("Job ${__data.fields.job_id}", "vigil-job", ("job_id",), by_row=True)])))


def _kpis(board):
    """The platform team's own KPIs over the dashboard's time range (subqueries at the panel's interval)."""
    hours, days = "$__range_s / 3600", "$__range_s / 86400"
    allocated = f"avg_over_time(count(vigil_gpu_job)[$__range:$__interval]) * {hours}"
    used = f"avg_over_time(sum(job_gpu:vigil_gpu_utilization:ratio)[$__range:$__interval]) * {hours}"
    gpu_days = f"avg_over_time(sum(vigil_gpu_up)[$__range:$__interval]) * {days}"
    incidents = "(sum(" + xids('{class="critical"}', "$__range") + ") or vector(0))"
    return (board.with_row(Row("Team KPIs (time range)"))
            .with_panel(single("GPU-hours allocated vs. used", [(allocated, "allocated"), (used, "used")],
                               GPU_HOURS, "GPU-hours jobs held, and the same weighted by utilization: the gap is "
                               "capacity allocated and not used.", width=8))
            .with_panel(single("Usage efficiency", f"({used}) / ({allocated} > 0)", PERCENT,
                               "GPU-hours used per GPU-hour allocated.", width=4,
                               thresholds=((None, "red"), (0.5, "orange"), (0.8, "green"))))
            .with_panel(single("Hardware incidents per 1,000 GPU-days", f"1000 * ({incidents}) / ({gpu_days} > 0)",
                               COUNT, "Critical (hardware) XIDs per 1,000 GPU-days of healthy GPUs.", width=6))
            .with_panel(single("MTTR", "max by (team) (vigil_oncall_mttr_seconds)", SECONDS,
                               "Mean time to resolve each team's incidents (the notifier's on-call window).",
                               width=6, empty="no incident resolved in the window")))


def build():
    board = dashboard(UID, "vigil / Fleet overview",
                      "The whole GPU fleet: health, utilization against the profiling view, errors, and who holds "
                      "which GPUs. Drill down: node → GPU → job.", ("fleet",))
    for section in (_health, _usage, _errors, _jobs, _kpis):
        board = section(board)
    return board
