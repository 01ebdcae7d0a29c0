"""The `job_xid` kind's join: XID events on a GPU (`xid_events`) joined to the job that held it and to the
job's owner.

Two things the exporter does shape the expression (`vigil.exporters.nvml_collector`, `exporters.jobs`):

- A GPU that falls off the bus (XID 79) stops answering NVML, so job attribution drops its
  `vigil_gpu_job` series in the same refresh that counts the XID: the job is joined from the GPU's
  recent view (`last_over_time` over `window` plus the 5-minute lookback), and the job's owner too
  (`vigil_job_info` goes with the node's last GPU of the job). The GPU's current holder wins when there
  is one, so a job that has just ended does not hide the one that follows it on the GPU.
- XID counts live in the exporter's memory, so a counter back after a restart is counted as
  `rules.kinds_xid` explains, like every XID kind's (the events are `xid_events`').
"""

from __future__ import annotations

from vigil.common.durations import format_duration, parse_prometheus_duration

JOB_METRIC = "vigil_gpu_job"  # 1 per (GPU, job holding it): job attribution (vigil.exporters.jobs)
JOB_INFO = "vigil_job_info"  # job_id -> user, tenant (one series per node the job runs on)
LOOKBACK_S = 300  # Prometheus's lookback: how long a vanished series is still read by an instant query


def _sole(jobs: str) -> str:
    """`jobs` on GPUs held by exactly one job: one XID series cannot join several jobs (many-to-many)."""
    return f"{jobs} unless on (node, gpu) (count by (node, gpu) ({jobs}) > 1)"


def on_job(events: str, window: str) -> str:
    """`events` (per-GPU XID series, e.g. `xid_events` over `window`) joined to the job holding the GPU
    and to the job's owner."""
    recent = format_duration(parse_prometheus_duration(window) + LOOKBACK_S)
    holder = f"({_sole(JOB_METRIC)}) or on (node, gpu) ({_sole(f'last_over_time({JOB_METRIC}[{recent}])')})"
    owner = f"topk by (job_id) (1, last_over_time({JOB_INFO}[{recent}]))"
    return f"{events} * on (node, gpu) group_left (job_id) ({holder}) * on (job_id) group_left (tenant, user) {owner}"
