"""`vigil exporter node`: SMART disk health, InfiniBand ports and a heartbeat on a Prometheus endpoint."""

from __future__ import annotations

import shutil
import socket
import time

import click

from vigil.common.click_types import Duration, HostPort, is_http_url
from vigil.common.hostport import http_url
from vigil.exporters.node_health import NodeHealthCollector
from vigil.exporters.smart import SmartReader, subprocess_runner


@click.command()
@click.option("--listen", default="0.0.0.0:9101", show_default=True, type=HostPort(default_host="0.0.0.0"),
              help="HOST:PORT to serve /metrics on (:PORT: every interface).")
@click.option("--node", default=None, help="Value of the node label (default: this host's name).")
@click.option("--smartctl", "smartctl", default="smartctl", show_default=True, help="smartctl binary (name or path).")
@click.option("--no-smart", is_flag=True, help="Do not run smartctl at all.")
@click.option("--simulate", is_flag=True, help="Use simulated smartctl output instead of the real disks.")
@click.option("--sim-disks", default=4, show_default=True, type=click.IntRange(0, 64), help="Disks to simulate.")
@click.option("--sim-fault", "sim_faults", multiple=True, metavar="INDEX:KIND",
              help="With --simulate: degrade disk INDEX with KIND (reallocation, pending_burst, uncorrectable, "
                   "timeout, nvme_media_errors) starting two days ago. Repeatable.")
@click.option("--sim-chaos-url", default=None, metavar="URL",
              help="With --simulate: read `disk-failing` faults of this node from the simulated fleet's chaos API "
                   "(`vigil chaos inject disk-failing`) at each SMART pass.")
@click.option("--interval", default="60s", show_default=True, type=Duration(minimum=1.0),
              help="Time between smartctl passes (scrapes in between serve the last pass).")
@click.option("--sysfs-root", default="/sys", show_default=True, type=click.Path(file_okay=False),
              help="Root of sysfs (InfiniBand ports are read from SYSFS_ROOT/class/infiniband).")
@click.option("--once", is_flag=True, help="Print one exposition to stdout and exit (no server).")
def node(listen, node, smartctl, no_smart, simulate, sim_disks, sim_faults, sim_chaos_url, interval, sysfs_root, once):
    """Serve node health metrics that node_exporter lacks: SMART, InfiniBand, heartbeat.

    smartctl needs root (or the disk group plus raw-I/O capability) to read disks.
    """
    node_name = node or socket.gethostname()
    if sim_chaos_url and not simulate:
        raise click.BadParameter("only with --simulate", param_hint="--sim-chaos-url")
    if sim_chaos_url and not is_http_url(sim_chaos_url):  # the reader retries quietly: say it now
        raise click.BadParameter(f"expected an http:// URL such as http://127.0.0.1:10835, got {sim_chaos_url!r}",
                                 param_hint="--sim-chaos-url")
    reader = None if no_smart else _smart_reader(node_name, smartctl, simulate, sim_disks, sim_faults, sim_chaos_url)
    collector = NodeHealthCollector(node_name, reader, sysfs_root=sysfs_root, interval=interval)
    from prometheus_client import CollectorRegistry, generate_latest, start_http_server

    registry = CollectorRegistry()
    registry.register(collector)
    if once:
        click.echo(generate_latest(registry).decode(), nl=False)
        if collector.smart_error():
            click.echo(f"warning: SMART read failed: {collector.smart_error()}", err=True)
        return
    host, port = listen
    try:
        start_http_server(port, addr=host, registry=registry)
    except OSError as exc:
        raise click.ClickException(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from exc
    click.echo(f"vigil node exporter for {node_name} on {http_url(host, port, '/metrics')}", err=True)
    while True:
        time.sleep(3600)


def _smart_reader(node_name, smartctl, simulate, sim_disks, sim_faults, sim_chaos_url) -> SmartReader | None:
    if simulate:
        from vigil.exporters.sim.smart import FAULT_KINDS, ChaosDiskFaults, DiskFault, SimulatedSmartctl

        click.secho("WARNING: --simulate: SMART data is SIMULATED, not read from this machine's disks.",
                    fg="red", bold=True, err=True)
        faults = {}
        for spec in sim_faults:
            index, _, kind = spec.partition(":")
            if not index.isdigit() or int(index) >= sim_disks or kind not in FAULT_KINDS:
                raise click.BadParameter(f"expected INDEX:KIND with INDEX < {sim_disks} and KIND in "
                                         f"{', '.join(FAULT_KINDS)}, got {spec!r}", param_hint="--sim-fault")
            faults[int(index)] = DiskFault(kind, time.time() - 2 * 86_400)
        chaos = ChaosDiskFaults(sim_chaos_url, node_name) if sim_chaos_url else None
        return SmartReader(SimulatedSmartctl(node_name, sim_disks, faults, chaos=chaos))
    if sim_faults:
        raise click.BadParameter("only with --simulate", param_hint="--sim-fault")
    if shutil.which(smartctl) is None:
        if "/" in smartctl:
            raise click.BadParameter(f"{smartctl!r} is not an executable file", param_hint="--smartctl")
        click.echo(f"warning: {smartctl!r} not found on PATH (install smartmontools); vigil_smart_up will be 0",
                   err=True)
    return SmartReader(subprocess_runner(smartctl))
