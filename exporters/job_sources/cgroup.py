"""Containers: a GPU process's container and Kubernetes pod from `/proc/<pid>/cgroup`.

Works for Docker, containerd and CRI-O under cgroup v1 and v2 and with the systemd or cgroupfs driver:
the container id is the 64-hex-digit path segment (`docker-<id>.scope`, `cri-containerd-<id>.scope`,
`crio-<id>.scope`, `/docker/<id>`), the pod UID the `pod<uid>` segment of a `kubepods` path (the
systemd driver writes its dashes as underscores). The job is the pod (`pod:<uid>`) when there is one,
else the container (`container:<first 12 digits>`). Nothing here says when a container's job has
finished, so this source never reports zombies; user and tenant are unknown (use the Kubernetes
source for namespace and pod names).
"""

from __future__ import annotations

import re
from pathlib import Path

from vigil.exporters.jobs import JobRef
from vigil.exporters.spec import GpuProcess

_CONTAINER = re.compile(r"(?:^|[/\-:])([0-9a-f]{64})(?:\.scope)?(?:/|$)")
_POD = re.compile(r"kubepods.*?pod([0-9a-f]{8}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{12})")


def container_of(cgroup_text: str) -> tuple[str | None, str | None]:
    """(pod UID, container id) named by the lines of a /proc/<pid>/cgroup file; None where absent."""
    pod = container = None
    for line in cgroup_text.splitlines():
        path = line.split(":", 2)[-1]
        if pod is None and (m := _POD.search(path)):
            pod = m.group(1).replace("_", "-")
        if container is None and (m := _CONTAINER.search(path)):
            container = m.group(1)
    return pod, container


class CgroupContainerSource:
    """Attributes GPU processes to the container (or pod) their cgroup names."""

    name = "cgroup"

    def __init__(self, proc_root: str | Path = "/proc"):
        self.proc_root = Path(proc_root)

    def refresh(self) -> None:
        """Nothing to list: everything comes from each process's own cgroup file."""

    def job_for(self, process: GpuProcess) -> JobRef | None:
        try:
            text = (self.proc_root / str(process.pid) / "cgroup").read_text()
        except FileNotFoundError:
            return None
        pod, container = container_of(text)
        if pod:
            return JobRef(job_id=f"pod:{pod}", source=self.name)
        if container:
            return JobRef(job_id=f"container:{container[:12]}", source=self.name)
        return None

    def is_finished(self, job: JobRef) -> bool:
        return False
