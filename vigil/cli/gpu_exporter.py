"""`vigil exporter gpu`: run the GPU exporter (NVML, the simulated fleet, or DCGM) in the foreground."""

from __future__ import annotations

import signal
import socket
import threading
from typing import Any

import click

from vigil.common.click_types import Duration, HostPort
from vigil.common.hostport import http_url
from vigil.common.ports import port_is_free

WARNING_SIMULATED = "no NVIDIA GPU/driver found: running the SIMULATED fleet"


def _nvml_problem() -> str | None:
    """Why NVML cannot be used here (no driver, no library), or None when it initialises."""
    import pynvml

    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as error:
        return str(error)
    pynvml.nvmlShutdown()
    return None


def _stop_on_signals() -> threading.Event:
    """An event set by SIGTERM or SIGINT (Ctrl-C); installed first, so a signal during a long start
    (a 1,250-node fleet takes seconds) still ends in a clean shutdown."""
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    return stop


def _wait(stop: threading.Event) -> None:
    while not stop.wait(1.0):
        pass


def _serve_registry(registry: Any, host: str, port: int) -> Any:
    from prometheus_client import start_http_server

    try:
        server, _thread = start_http_server(port, addr=host, registry=registry)
    except OSError as error:
        raise click.ClickException(f"cannot listen on {host}:{port}: {error.strerror or error}") from None
    return server


@click.command("gpu")
@click.option("--backend", type=click.Choice(["nvml", "sim", "dcgm"]), default=None,
              help="Where GPU data comes from [default: nvml if the NVIDIA driver answers, else sim].")
@click.option("--listen", default="127.0.0.1:9835", show_default=True, type=HostPort(),
              help="HOST:PORT of /metrics (sim: node-1's port; node i listens on PORT+i-1).")
@click.option("--interval", type=Duration(minimum=0.05), default="5s", show_default=True,
              help="Time between NVML collection cycles (dcgm: between reads of dcgm-exporter's page).")
@click.option("--node", default=None, help="Node label [default: the hostname].")
@click.option("--expected-gpus", type=click.IntRange(min=0), default=None,
              help="GPUs the node should have [default: nvml: the first successful count; dcgm: the most GPUs "
                   "seen on one page since start].")
@click.option("--gpu-timeout", type=Duration(), default="2s", show_default=True,
              help="nvml: time before a GPU whose NVML call hangs is reported stalled (0: no isolation).")
@click.option("--job-sources", default="slurm,cgroup", show_default=True,
              help="nvml: how to find the job of each GPU process: any of slurm, cgroup, kubernetes "
                   "(comma-separated), or none.")
@click.option("--sim-nodes", type=click.IntRange(1, 5000), default=4, show_default=True, help="sim: nodes in the fleet.")
@click.option("--sim-gpus", type=click.IntRange(1, 64), default=8, show_default=True, help="sim: GPUs per node.")
@click.option("--sim-jobs", type=click.IntRange(0, 1000), default=6, show_default=True,
              help="sim: simulated training jobs (Slurm and Kubernetes, job slots placed from the last node "
                   "backwards; 0: none).")
@click.option("--sim-job-hangs", type=click.FloatRange(0.0, 0.85), default=0.0, show_default=True,
              help="sim: share of simulated jobs that hang part-way on their own, as on a real cluster (JobHung "
                   "pages them); 0: a job hangs only when the chaos fault job-hang hangs it.")
@click.option("--control-listen", default=None, type=HostPort(),
              help="sim: HOST:PORT of the chaos API [default: listen host, listen port + 1000].")
@click.option("--single-port", is_flag=True,
              help="sim: serve every node on the --listen port as /metrics?node=node-N (large fleets).")
@click.option("--nvlink-per-link", is_flag=True,
              help="nvml, sim: export NVLink error counters per link (18 x 3 series a GPU) instead of one total "
                   "per GPU and counter (link=\"all\").")
@click.option("--dcgm-url", default="http://127.0.0.1:9400/metrics", show_default=True,
              help="dcgm: URL of dcgm-exporter's /metrics.")
@click.option("--dcgm-timeout", type=Duration(positive=True), default="2s", show_default=True,
              help="dcgm: give up on a read of dcgm-exporter's page after this long (it then counts as down).")
def gpu(backend: str | None, listen: tuple[str, int], interval: float, node: str | None, expected_gpus: int | None,
        gpu_timeout: float, job_sources: str, sim_nodes: int, sim_gpus: int, sim_jobs: int, sim_job_hangs: float,
        control_listen: tuple[str, int] | None, single_port: bool, nvlink_per_link: bool,
        dcgm_url: str, dcgm_timeout: float) -> None:
    """Export GPU health and utilization metrics for Prometheus until SIGTERM/SIGINT."""
    stop = _stop_on_signals()
    host, port = listen
    node = node or socket.gethostname()
    if backend is None:
        backend = "nvml" if _nvml_problem() is None else "sim"
        if backend == "sim":
            click.secho(f"WARNING: {WARNING_SIMULATED}", fg="yellow", bold=True, err=True)
    if backend == "sim":
        _run_sim(stop, host, port, control_listen, interval, sim_nodes, sim_gpus, single_port, nvlink_per_link, sim_jobs,
                 sim_job_hangs)
    elif backend == "nvml":
        _run_nvml(stop, host, port, node, interval, expected_gpus, gpu_timeout, _job_sources(job_sources),
                  nvlink_per_link)
    else:
        _run_dcgm(stop, host, port, node, dcgm_url, interval, dcgm_timeout, expected_gpus)


def _run_sim(stop: threading.Event, host: str, port: int, control_listen: tuple[str, int] | None, interval: float,
             nodes: int, gpus: int, single_port: bool, nvlink_per_link: bool = False, jobs: int = 0,
             job_hangs: float = 0.0) -> None:
    from vigil.exporters.fleet_server import FleetServer
    from vigil.exporters.sim.fleet import SimulatedFleet

    last_port = port if single_port else port + nodes - 1
    if last_port > 65535:
        raise click.BadParameter(f"ports {port}..{port + nodes - 1} do not fit", param_hint="--listen")
    control_host, control_port = control_listen or (host, port + 1000)
    if port <= control_port <= last_port:
        raise click.BadParameter(f"control port {control_port} collides with the node ports {port}..{last_port}",
                                 param_hint="--control-listen")
    if not _can_listen(host, port, last_port):
        raise click.ClickException(f"cannot listen on {host}:{port}..{last_port} (is another exporter running?)")
    try:
        server = FleetServer(SimulatedFleet(nodes, gpus, jobs=jobs, job_hang_rate=job_hangs), host=host, port=port, control_host=control_host,
                             control_port=control_port, interval=interval, single_port=single_port,
                             nvlink_per_link=nvlink_per_link)
    except OSError as error:
        raise click.ClickException(f"cannot listen on {control_host}:{control_port} for the chaos API: "
                                   f"{error.strerror or error}") from None
    server.start()
    where = (http_url(host, port, f"/metrics?node=node-1..node-{nodes}") if single_port
             else f"{http_url(host, port)}..{last_port}/metrics")
    click.echo(f"simulated fleet: {nodes} nodes x {gpus} GPUs on {where}, {len(server.fleet.jobs.slots)} job slots; "
               f"chaos API on {server.control_url}", err=True)
    try:
        _wait(stop)
    finally:
        server.stop()


def _can_listen(host: str, first: int, last: int) -> bool:
    """Whether every port in first..last can be bound now (checked before starting anything)."""
    return all(port_is_free(port, host) for port in range(first, last + 1))


def _job_sources(spec: str) -> list[Any]:
    """The job sources named by --job-sources (validated before anything starts)."""
    names = [name.strip() for name in spec.split(",") if name.strip()]
    if names == ["none"]:
        return []
    unknown = sorted(set(names) - {"slurm", "cgroup", "kubernetes"})
    if unknown or not names:
        raise click.BadParameter(f"unknown job source(s) {', '.join(unknown) or spec!r}: use slurm, cgroup, "
                                 "kubernetes or none", param_hint="--job-sources")
    sources: list[Any] = []
    for name in dict.fromkeys(names):
        if name == "slurm":
            from vigil.exporters.job_sources.slurm import SlurmSource
            sources.append(SlurmSource())
        elif name == "cgroup":
            from vigil.exporters.job_sources.cgroup import CgroupContainerSource
            sources.append(CgroupContainerSource())
        else:
            try:
                from vigil.exporters.job_sources.kubernetes import GrpcPodResourcesClient, KubernetesSource
                sources.append(KubernetesSource(GrpcPodResourcesClient()))
            except ImportError as error:
                raise click.ClickException(f"--job-sources kubernetes needs the [k8s] extra ({error})") from None
    return sources


def _run_nvml(stop: threading.Event, host: str, port: int, node: str, interval: float, expected_gpus: int | None,
              gpu_timeout: float, job_sources: list[Any], nvlink_per_link: bool = False) -> None:
    import pynvml
    from prometheus_client import CollectorRegistry, generate_latest

    from vigil.exporters.jobs import JobAttributionCollector
    from vigil.exporters.metrics_http import MetricsServer
    from vigil.exporters.nvml_collector import NvmlCollector

    problem = _nvml_problem()
    if problem is not None:
        raise click.ClickException(f"NVML is not usable on this machine ({problem}); try --backend sim")
    collector = NvmlCollector(pynvml, node, interval=interval, expected_gpus=expected_gpus,
                              gpu_timeout=gpu_timeout or None, nvlink_per_link=nvlink_per_link)
    jobs = CollectorRegistry()
    if job_sources:  # the job map is cached and rebuilt in the background: appending it costs little
        jobs.register(JobAttributionCollector(collector.processes, job_sources, node,
                                              unreadable=collector.unreadable_gpus))
    try:
        server = MetricsServer(host, port, lambda _query: collector.exposition() + generate_latest(jobs))
    except OSError as error:
        raise click.ClickException(f"cannot listen on {host}:{port}: {error.strerror or error}") from None
    collector.start()
    click.echo(f"NVML GPU exporter for {node} on {http_url(host, port, '/metrics')}", err=True)
    try:
        _wait(stop)
    finally:
        server.close()
        collector.stop()


def _run_dcgm(stop: threading.Event, host: str, port: int, node: str, url: str, interval: float, timeout: float,
              expected_gpus: int | None) -> None:
    from prometheus_client import CollectorRegistry

    try:
        from vigil.exporters.dcgm import DcgmCollector
    except ImportError as error:
        raise click.ClickException(f"the dcgm backend is not available in this build ({error})") from None
    try:
        collector = DcgmCollector(url=url, node=node, timeout=timeout, max_age=interval, expected_gpus=expected_gpus)
    except ValueError as error:
        raise click.BadParameter(str(error), param_hint="--dcgm-url") from None
    registry = CollectorRegistry()
    registry.register(collector)
    server = _serve_registry(registry, host, port)
    collector.start()  # reads in a background loop from now on: a scrape never waits for dcgm-exporter
    click.echo(f"DCGM bridge for {node} ({url}) on {http_url(host, port, '/metrics')}", err=True)
    try:
        _wait(stop)
    finally:
        server.shutdown()
        collector.stop()
