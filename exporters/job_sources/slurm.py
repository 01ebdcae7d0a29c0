"""Slurm: a GPU process's job from `/proc/<pid>/environ`, job liveness from Slurm's job cgroups.

slurmstepd starts every task with `SLURM_JOB_ID`, `SLURM_JOB_USER` and `SLURM_JOB_ACCOUNT` in its
environment and children inherit them. Reading another user's environ needs root (or the same user),
which the exporter has anyway for NVML process lists. When environ is unreadable or was scrubbed, the
job id is taken from the process's cgroup path (`.../job_<id>/...`) if Slurm's cgroup plugin is used.

A job is finished when Slurm's cgroup directory for it is gone (`task/cgroup` removes it at job end),
under cgroup v2 `<root>/system.slice/slurmstepd.scope/job_<id>` and under v1
`<root>/<controller>/slurm*/uid_<uid>/job_<id>`. On nodes without Slurm cgroups no job is ever called
finished (zombies cannot be told apart); pass `active_jobs` (e.g. from `squeue`) to decide instead.
`read(pid, name)` replaces reading `<proc_root>/<pid>/<name>` (the simulated fleet serves its jobs'
processes this way, `exporters.sim.job_sources`).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Callable

from vigil.exporters.jobs import JobRef
from vigil.exporters.spec import GpuProcess

_CGROUP_JOB = re.compile(r"/job_(\d+)(?:/|$)")
_CGROUP_PATTERNS = ("system.slice/slurmstepd.scope/job_*", "*/slurm*/uid_*/job_*", "slurm*/uid_*/job_*")


def parse_environ(raw: bytes) -> dict[str, str]:
    """KEY=VALUE pairs of an environ file's NUL-separated bytes."""
    env = {}
    for item in raw.split(b"\0"):
        key, sep, value = item.partition(b"=")
        if sep:
            env[key.decode(errors="replace")] = value.decode(errors="replace")
    return env


class SlurmSource:
    """Finds Slurm jobs of GPU processes; see the module docstring for what it reads."""

    name = "slurm"

    def __init__(self, proc_root: str | Path = "/proc", cgroup_root: str | Path = "/sys/fs/cgroup",
                 active_jobs: Callable[[], set[str]] | None = None,
                 read: Callable[[int, str], bytes] | None = None):
        self.proc_root = Path(proc_root)
        self._read = read or (lambda pid, name: (self.proc_root / str(pid) / name).read_bytes())
        self.cgroup_root = Path(cgroup_root)
        self._active_jobs = active_jobs
        self._active: set[str] | None = None

    def refresh(self) -> None:
        if self._active_jobs is not None:
            self._active = set(self._active_jobs())
            return
        dirs = [p for pattern in _CGROUP_PATTERNS for p in self.cgroup_root.glob(pattern)]
        has_slurm_cgroups = any(self.cgroup_root.glob("system.slice/slurmstepd.scope")) or any(
            self.cgroup_root.glob("*/slurm*")) or any(self.cgroup_root.glob("slurm*"))
        self._active = {p.name.removeprefix("job_") for p in dirs} if has_slurm_cgroups else None

    def job_for(self, process: GpuProcess) -> JobRef | None:
        try:
            env = parse_environ(self._read(process.pid, "environ"))
        except PermissionError:
            env = {}
        job_id = env.get("SLURM_JOB_ID") or self._job_from_cgroup(process.pid)
        if not job_id:
            return None
        return JobRef(job_id=job_id, user=env.get("SLURM_JOB_USER", ""), tenant=env.get("SLURM_JOB_ACCOUNT", ""),
                      source=self.name)

    def _job_from_cgroup(self, pid: int) -> str | None:
        try:
            text = self._read(pid, "cgroup").decode(errors="replace")
        except OSError:
            return None
        match = _CGROUP_JOB.search(text)
        return match.group(1) if match else None

    def is_finished(self, job: JobRef) -> bool:
        return self._active is not None and job.job_id not in self._active
