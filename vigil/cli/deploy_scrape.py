"""`vigil deploy scrape-config --node HOST[:PORT] ... [--file-sd]`: what a central Prometheus scrapes on
GPU nodes (vigil's GPU and node health exporters, Debian's node_exporter), as a `scrape_configs`
fragment or as file_sd target JSON. The jobs come from the code that writes the local stack's
prometheus.yml (`vigil.stack.config.prometheus`), so a fleet's jobs and labels are the ones the rules expect.
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from vigil.common.hostport import format_host_port, parse_host_port

from vigil.stack.config import dump_config
from vigil.stack.config.prometheus import GPU_JOB, NODE_EXPORTER_JOB, NODE_HEALTH_JOB, exporter_job, node_target

NODE_EXPORTER_PORT = 9100  # Debian's prometheus-node-exporter


def _default_port(module: str, command: str) -> int:
    """The port of an exporter command's own `--listen` default (one source for both)."""
    import importlib

    listen = next(p for p in getattr(importlib.import_module(module), command).params if p.name == "listen")
    return parse_host_port(listen.default).port


def parse_node(value: str, default_port: int) -> tuple[str, str, int]:
    """`[NAME=]HOST[:PORT]` as (node label, host, port); the label defaults to HOST. ValueError when bad."""
    name, sep, address = value.partition("=")
    if not sep:
        name, address = "", value
    address = address.strip()
    bare_ipv6 = address.startswith("[") and address.endswith("]")
    if bare_ipv6 or (address and ":" not in address):
        host, port = address.strip("[]"), default_port
        if not host or any(c in host for c in "/[] "):
            raise ValueError(f"{value!r}: no usable host")
    else:
        host, port = parse_host_port(address)
    return (name.strip() or host), host, port


class _Node(click.ParamType):
    name = "node"

    def convert(self, value, param, ctx):
        if isinstance(value, tuple):
            return value
        try:
            return parse_node(value, _default_port("vigil.cli.gpu_exporter", "gpu"))
        except ValueError as exc:
            self.fail(f"{exc} (expected [NAME=]HOST[:PORT], e.g. gpu-17 or gpu-17=10.0.0.17:9835)", param, ctx)

    def get_metavar(self, param, ctx=None) -> str:
        return "[NAME=]HOST[:PORT]"


def scrape_jobs(nodes: list[tuple[str, str, int]], node_health_port: int, node_exporter_port: int) -> dict[str, list[dict]]:
    """{job name: its static target groups}, one target group per node with its `node` label."""
    jobs = {GPU_JOB: [node_target(host, port, name) for name, host, port in nodes]}
    if node_health_port:
        jobs[NODE_HEALTH_JOB] = [node_target(host, node_health_port, name) for name, host, _ in nodes]
    if node_exporter_port:
        jobs[NODE_EXPORTER_JOB] = [node_target(host, node_exporter_port, name) for name, host, _ in nodes]
    return jobs


def scrape_configs(jobs: dict[str, list[dict]]) -> list[dict]:
    """The jobs as `scrape_configs` entries: vigil's exporters keep their own node/gpu labels (honor_labels)."""
    return [exporter_job(name, targets) if name != NODE_EXPORTER_JOB else {"job_name": name, "static_configs": targets}
            for name, targets in jobs.items()]


def _read_nodes_file(path: Path, default_port: int) -> list[tuple[str, str, int]]:
    try:
        content = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:  # unreadable, or not a text file
        raise click.ClickException(f"{path}: cannot read it as UTF-8 text: {exc}") from None
    nodes, problems = [], []
    for number, line in enumerate(content.splitlines(), start=1):
        text = line.split("#", 1)[0].strip()
        if text:
            try:
                nodes.append(parse_node(text, default_port))
            except ValueError as exc:
                problems.append(f"{path}:{number}: {exc}")
    if problems:
        raise click.ClickException("\n".join(problems))
    return nodes


def _refuse_duplicates(nodes: list[tuple[str, str, int]]) -> None:
    """Every node label and every HOST:PORT once: two hosts under one `node` label would be one node's
    series in Prometheus, flapping between them; one exporter listed twice would be scraped twice."""
    problems = []
    for what, key in (("node label", lambda n: n[0]), ("exporter", lambda n: format_host_port(n[1], n[2]))):
        seen: dict[str, list[str]] = {}
        for node in nodes:
            seen.setdefault(key(node), []).append(f"{node[0]}={format_host_port(node[1], node[2])}")
        problems += [f"{what} {name} is given {len(given)} times ({', '.join(given)})"
                     for name, given in seen.items() if len(given) > 1]
    if problems:
        raise click.UsageError("; ".join(problems) + ": each node needs its own label and exporter")


@click.command("scrape-config")
@click.option("--node", "nodes", multiple=True, type=_Node(),
              help="A GPU node: its GPU exporter's HOST[:PORT] (port: the exporter's default), NAME= to set its "
                   "`node` label (default: HOST). Repeatable.")
@click.option("--nodes-file", type=click.Path(path_type=Path, dir_okay=False, exists=True),
              help="File of --node values, one a line (# comments).")
@click.option("--node-health-port", type=click.IntRange(0, 65535), default=None,
              help="Port of `vigil exporter node` on each node (0: leave the job out) [default: its --listen port].")
@click.option("--node-exporter-port", type=click.IntRange(0, 65535), default=NODE_EXPORTER_PORT, show_default=True,
              help="Port of Debian's prometheus-node-exporter on each node (0: leave the job out).")
@click.option("--file-sd", "file_sd", is_flag=True,
              help="Print file_sd target JSON of one job (--job) instead of a scrape_configs fragment.")
@click.option("--job", type=click.Choice([GPU_JOB, NODE_HEALTH_JOB, NODE_EXPORTER_JOB]), default=GPU_JOB,
              show_default=True, help="With --file-sd: the job whose targets to print.")
def scrape_config(nodes, nodes_file, node_health_port, node_exporter_port, file_sd, job):
    """Print the Prometheus scrape jobs of GPU nodes' exporters (YAML `scrape_configs:`, or file_sd JSON)."""
    gpu_port = _default_port("vigil.cli.gpu_exporter", "gpu")
    every = list(nodes) + (_read_nodes_file(nodes_file, gpu_port) if nodes_file else [])
    if not every:
        raise click.UsageError("name at least one --node (or a --nodes-file)")
    _refuse_duplicates(every)
    if node_health_port is None:
        node_health_port = _default_port("vigil.cli.node_exporter", "node")
    jobs = scrape_jobs(every, node_health_port, node_exporter_port)
    if file_sd:
        if job not in jobs:
            raise click.BadParameter(f"{job} is left out (its port is 0)", param_hint="--job")
        click.echo(json.dumps(jobs[job], indent=2))
    else:
        click.echo(dump_config({"scrape_configs": scrape_configs(jobs)}), nl=False)
