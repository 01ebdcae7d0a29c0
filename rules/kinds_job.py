"""The `job_xid` kind: XID events on a GPU joined to the job that held it and to the job's owner.

Two things the exporter does shape the expression (`vigil.exporters.nvml_collector`, `exporters.jobs`):

- A GPU that falls off the bus (XID 79) stops answering NVML, so job attribution drops its
  `vigil_gpu_job` series in the same refresh that counts the XID: the job is joined from the GPU's
  recent view (`last_over_time` over `window` plus the 5-minute lookback), and the job's owner too
  (`vigil_job_info` goes with the node's last GPU of the job). The GPU's current holder wins when there
  is one, so a job that has just ended does not hide the one that follows it on the GPU.
- XID counts live in the exporter's memory: after a restart (a node reboot) a counter comes back with
  its next event, counting from 1 again, which can equal the count before the restart, so neither
  `increase()` nor `offset` sees the event. A counter that was missing at some minute of `window` and
  is back counts with its whole value, but only while the GPU's last XID
  (`vigil_gpu_last_xid_timestamp_seconds`) lies within `window`: a counter that is back after a failed
  scrape, with no new event, is not an event.
"""

from __future__ import annotations

from vigil.common.durations import format_duration, parse_prometheus_duration

from .promql import selector
from .reader import Reader
from .xid_catalog import with_action_label

JOB_METRIC = "vigil_gpu_job"  # 1 per (GPU, job holding it): job attribution (vigil.exporters.jobs)
JOB_INFO = "vigil_job_info"  # job_id -> user, tenant (one series per node the job runs on)
LAST_XID = "vigil_gpu_last_xid_timestamp_seconds"  # per GPU: Unix time of its last XID event
LOOKBACK_S = 300  # Prometheus's lookback: how long a vanished series is still read by an instant query
STEP = "1m"  # how finely a counter's gap (an exporter restart) is looked for


def _sole(jobs: str) -> str:
    """`jobs` on GPUs held by exactly one job: one XID series cannot join several jobs (many-to-many)."""
    return f"{jobs} unless on (node, gpu) (count by (node, gpu) ({jobs}) > 1)"


def _events(series: str, window: str, seconds: float) -> str:
    """Per XID series: its increase within `window`, or its whole value when it was missing at some step
    of `window` (new, or back after an exporter restart) and its GPU had an XID within `window`."""
    whole = f"count_over_time({series}[{window}:{STEP}]) >= scalar(count_over_time(vector(1)[{window}:{STEP}]))"
    fresh = f"time() - {LAST_XID} < {seconds:g}"
    return f"(({series} unless ({whole})) and on (node, gpu) ({fresh})) or increase({series}[{window}])"


def job_xid(r: Reader) -> str | None:
    """Keys `metric` (a per-XID counter), `selector`, `window`, `above` (default 0)."""
    metric, labels = r.metric("metric"), r.string_map("selector")
    window, above = r.duration("window", required=True), r.number("above") or "0"
    if None in (metric, labels, window):
        return None
    seconds = parse_prometheus_duration(window)
    series = selector(metric, labels)
    events = with_action_label(f"({_events(series, window, seconds)}) > {above}")
    recent = format_duration(seconds + LOOKBACK_S)
    holder = f"({_sole(JOB_METRIC)}) or on (node, gpu) ({_sole(f'last_over_time({JOB_METRIC}[{recent}])')})"
    owner = f"topk by (job_id) (1, last_over_time({JOB_INFO}[{recent}]))"
    return f"{events} * on (node, gpu) group_left (job_id) ({holder}) * on (job_id) group_left (tenant, user) {owner}"
