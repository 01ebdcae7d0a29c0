"""What the job sources of a simulated node read, and the node's scrape page with job attribution.

A real node's attribution reads `/proc/<pid>/environ` and `/proc/<pid>/cgroup` (Slurm), Slurm's list
of active jobs, and the kubelet's pod-resources answer (Kubernetes). Here the simulated jobs
(`exporters.sim.jobs`) provide those same data, the way `SimulatedNvml` stands in for the driver, and
the real sources (`SlurmSource`, `KubernetesSource`) and `JobAttributionCollector` do the rest.

`AttributedNode` is the scrape page of a node with job slots in the simulated fleet: the NVML
collector's page plus the job families, both refreshed in the same `refresh()` call on the fleet's
refresh pool (no thread of its own).
"""

from __future__ import annotations

from typing import Callable

from prometheus_client import CollectorRegistry, generate_latest

from vigil.exporters.job_sources.kubernetes import KubernetesSource, PodDevices
from vigil.exporters.job_sources.slurm import SlurmSource
from vigil.exporters.jobs import JobAttributionCollector, JobSource
from vigil.exporters.nvml_collector import NvmlCollector
from vigil.exporters.sim.identity import device_uuid
from vigil.exporters.sim.jobs import JobSchedule, SimJob

Clock = Callable[[], float]


class SimulatedProc:
    """`/proc/<pid>/{environ,cgroup}` of the Slurm jobs' processes on one node (a `SlurmSource` reader)."""

    def __init__(self, schedule: JobSchedule, node: str, clock: Clock) -> None:
        self.schedule, self.node, self.clock = schedule, node, clock

    def _job(self, pid: int) -> SimJob:
        for job in self.schedule.on_node(self.node, self.clock()):
            if job.scheduler == "slurm" and any(job.pid(n, g) == pid for n, g in job.gpus if n == self.node):
                return job
        raise FileNotFoundError(f"/proc/{pid}")  # not a Slurm job's process (or it has exited)

    def read(self, pid: int, name: str) -> bytes:
        job = self._job(pid)
        if name == "environ":
            env = {"SLURM_JOB_ID": job.job_id, "SLURM_JOB_USER": job.user, "SLURM_JOB_ACCOUNT": job.tenant,
                   "CUDA_VISIBLE_DEVICES": ",".join(str(g) for n, g in job.gpus if n == self.node)}
            return b"".join(f"{k}={v}".encode() + b"\0" for k, v in env.items())
        if name == "cgroup":
            return f"0::/system.slice/slurmstepd.scope/job_{job.job_id}/step_0/user/task_0\n".encode()
        raise FileNotFoundError(f"/proc/{pid}/{name}")

    def active_jobs(self) -> set[str]:
        """The Slurm jobs alive on the node (what `squeue -w <node>` would list)."""
        return {job.job_id for job in self.schedule.on_node(self.node, self.clock()) if job.scheduler == "slurm"}


class SimulatedPodResources:
    """The kubelet pod-resources answer of one node: GPU UUIDs allocated to the running pods."""

    def __init__(self, schedule: JobSchedule, node: str, clock: Clock) -> None:
        self.schedule, self.node, self.clock = schedule, node, clock

    def list(self) -> list[PodDevices]:
        out = []
        for job in self.schedule.on_node(self.node, self.clock()):
            if job.scheduler == "kubernetes":
                namespace, pod = job.job_id.split("/", 1)
                ids = tuple(device_uuid(n, g) for n, g in job.gpus if n == self.node)
                out.append(PodDevices(namespace, pod, "trainer", "nvidia.com/gpu", ids))
        return out


def node_sources(schedule: JobSchedule, node: str, clock: Clock) -> list[JobSource]:
    """The real Slurm and Kubernetes sources of `node`, reading the simulated jobs."""
    proc = SimulatedProc(schedule, node, clock)
    return [SlurmSource(active_jobs=proc.active_jobs, read=proc.read),
            KubernetesSource(SimulatedPodResources(schedule, node, clock))]


class AttributedNode:
    """The NVML collector of a node plus its job attribution, refreshed together."""

    def __init__(self, collector: NvmlCollector, schedule: JobSchedule, clock: Clock) -> None:
        self.collector = collector
        # refreshed only by refresh(): a max age no scrape reaches, so no scrape starts a thread
        self.jobs = JobAttributionCollector(collector.processes, node_sources(schedule, collector.node, clock),
                                            collector.node, refresh_interval=1e12, wait=0.0,
                                            unreadable=collector.unreadable_gpus)
        self._registry = CollectorRegistry(auto_describe=False)
        self._registry.register(self.jobs)
        self._page = b""

    def refresh(self) -> None:
        self.collector.refresh()
        self.jobs.refresh()
        self._page = generate_latest(self._registry)

    def exposition(self) -> bytes:
        return self.collector.exposition() + self._page
