"""The `job` annotation: the training job a GPU alert stops, carried by the alert itself.

An alert about one GPU (a GPU lost, an uncorrectable ECC error, overheating) has no `job_id` label — its
identity must not change when a job ends — so the rule generator (`vigil.rules.generate`) gives it an
annotation that Prometheus fills at each evaluation from the job exporters' series: the job holding the
GPU and its owner, `57431500 (owner bob)`, or nothing when no job holds it. The notifier's page shows it
as its `job:` line (`vigil.notifier.core.page_text`), so the DRI knows which training run the fault
stops and whom to tell.
"""

from __future__ import annotations

ANNOTATION = "job"


def template(node_label: str = "node", gpu_label: str = "gpu") -> str:
    """The Prometheus template of the annotation, for an alert labelled with its node and GPU."""
    held = f'printf "vigil_gpu_job{{node=%q,gpu=%q}}" $labels.{node_label} $labels.{gpu_label}'
    owner = 'printf "vigil_job_info{job_id=%q}" $job'
    return (f"{{{{ with query ({held}) }}}}{{{{ $job := . | first | label \"job_id\" }}}}{{{{ $job }}}}"
            f"{{{{ with query ({owner}) }}}}{{{{ with . | first | label \"user\" }}}} (owner {{{{ . }}}})"
            f"{{{{ end }}}}{{{{ end }}}}{{{{ end }}}}")
