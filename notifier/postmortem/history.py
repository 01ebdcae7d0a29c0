"""What Prometheus knows of an incident's jobs and GPUs beyond the alert: who owned each job and how many
GPUs it held, and each affected GPU's history before the fault (its XIDs, ECC errors and row remaps of
the last 30 days, and its AIOps failure risk an hour before the first sign). The postmortem's impact and
contributing factors are drawn from these (`analysis.py`); what Prometheus cannot answer stays unknown.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from vigil.common.prometheus_api import PrometheusClient, PrometheusUnavailable
from vigil.rules.promql import quote

HISTORY_WINDOW = "30d"
RISK_BEFORE_S = 3600  # the failure risk is read over the hour before the first sign


@dataclass
class Job:
    job_id: str
    owner: str  # tenant/user, or the tenant alone (a Kubernetes pod names no user), or "unknown"
    gpus: int  # the most GPUs it held at once in the window (a job keeps its GPUs for its life)


@dataclass
class GpuHistory:
    node: str
    gpu: str
    xids: dict[str, int] = field(default_factory=dict)  # XID -> count in the 30 days before the first alert
    ecc: dict[str, int] = field(default_factory=dict)  # error_type (corrected/uncorrected) -> count, same window
    remap_pending: bool = False
    remap_failed: bool = False
    risk: float | None = None  # the highest GPU failure risk in the hour before the first sign
    risk_threshold: float | None = None  # the calibrated alarm threshold then


def _selector(labels: dict) -> str:
    return ", ".join(f"{key}={quote(labels[key])}" for key in ("node", "gpu") if key in labels)


def jobs(prometheus: PrometheusClient, job_ids: list[str], start: float, end: float, step: float) -> list[Job]:
    """Owner and GPU count of each job of `job_ids` over the window (`vigil_job_info`, `vigil_gpu_job`)."""
    if not job_ids:
        return []
    pattern = quote("|".join(re.escape(job) for job in job_ids))
    owners = {}
    for series in prometheus.query_range(f"max by (job_id, tenant, user) (vigil_job_info{{job_id=~{pattern}}})",
                                         start, end, step):
        labels = series.labels
        owners[labels.get("job_id")] = "/".join(p for p in (labels.get("tenant"), labels.get("user")) if p) or "unknown"
    counts = {s.labels.get("job_id"): int(max((v for _, v in s.points), default=0))
              for s in prometheus.query_range(f"count by (job_id) (vigil_gpu_job{{job_id=~{pattern}}})", start, end, step)}
    return [Job(job, owners.get(job, "unknown"), counts.get(job, 0)) for job in job_ids]


def gpu_history(prometheus: PrometheusClient, gpu: dict, first_alert_at: float, first_sign_at: float | None) -> GpuHistory:
    """The history of GPU `gpu` ({node, gpu}) up to its first alert; PrometheusUnavailable when it cannot say."""
    found = GpuHistory(gpu["node"], str(gpu["gpu"]))
    where = _selector(gpu)
    before = first_alert_at - 1

    def by(label: str, promql: str) -> dict[str, int]:
        return {s.labels.get(label, "?"): round(s.value) for s in prometheus.query(promql, before) if round(s.value) > 0}

    found.xids = by("xid", f"sum by (xid) (increase(vigil_gpu_xid_errors_total{{{where}}}[{HISTORY_WINDOW}]))")
    found.ecc = by("error_type", f"sum by (error_type) (increase(vigil_gpu_ecc_errors_total{{{where}}}[{HISTORY_WINDOW}]))")
    found.remap_pending = any(s.value > 0 for s in prometheus.query(f"max(vigil_gpu_remap_pending{{{where}}})", before))
    found.remap_failed = any(s.value > 0 for s in prometheus.query(f"max(vigil_gpu_remap_failure{{{where}}})", before))
    risk_at = (first_sign_at if first_sign_at is not None else first_alert_at) - 1
    risk = prometheus.query(f'max(max_over_time(vigil_failure_risk{{kind="gpu", {where}}}[{RISK_BEFORE_S}s]))', risk_at)
    found.risk = risk[0].value if risk else None
    threshold = prometheus.query('max(vigil_failure_risk_threshold{kind="gpu"})', risk_at)
    found.risk_threshold = threshold[0].value if threshold else None
    return found


def gather_history(prometheus: PrometheusClient, gpus: list[dict], job_ids: list[str], window: tuple[float, float, float],
                   first_alert_at: float, first_sign_at: float | None) -> tuple[list[Job], list[GpuHistory], list[str]]:
    """(jobs, the GPUs' histories, problems): what could not be asked is a problem, not an error."""
    problems, found_jobs, histories = [], [], []
    try:
        found_jobs = jobs(prometheus, job_ids, *window)
    except PrometheusUnavailable as exc:
        problems.append(str(exc))
    for gpu in gpus[:4]:
        try:
            histories.append(gpu_history(prometheus, gpu, first_alert_at, first_sign_at))
        except PrometheusUnavailable as exc:
            problems.append(str(exc))
    return found_jobs, histories, problems
