"""`vigil up`, `down` and `status`: run a local stack and look at it (`vigil inbox`: `inbox.py`)."""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path

import click

from vigil.common.click_types import Duration

from vigil.cli.dashboards import grafana_options, grafana_target, provision_when_up
from vigil.cli.options import run_dir_option
from vigil.stack.components import MissingBinaries
from vigil.stack.detach import DETACHED_CHILD_FLAG, start_detached
from vigil.stack.runstate import NoStack, read_state
from vigil.stack.settings import MAX_SHARDS, SettingsError, load_settings
from vigil.stack.run import StackError, run_stack
from vigil.stack.stop import StopFailed, stop_stack
from vigil.stack.supervisor import is_healthy



@click.command()
@run_dir_option
@click.option("--config", "config_file", type=click.Path(path_type=Path, exists=True, dir_okay=False), help="Stack config file (YAML).")
@click.option("--port-base", type=int, help="First port; the components use port-base … port-base+99.  [default: 9600]")
@click.option("--sim-nodes", type=int, help="Simulated GPU nodes.  [default: 4]")
@click.option("--sim-gpus", type=int, help="GPUs per simulated node.  [default: 8]")
@click.option("--gpu-backend", type=click.Choice(["auto", "sim", "nvml"]), default="auto", show_default=True)
@click.option("--scrape-interval", type=Duration(positive=True),
              help="Time between scrapes (and rule evaluations): 2, 2s, 500ms …  [default: 2s]")
@click.option("--no-aiops", is_flag=True, help="Do not run the AIOps service (skips history backfill).")
@click.option("--profile", type=click.Choice(["single", "ha", "sharded"]),
              help="single: one of each component; ha: two Prometheus replicas, a 3-peer Alertmanager cluster, "
                   "two notifiers on one PostgreSQL and VictoriaMetrics; sharded: --shards Prometheus shards "
                   "(hashmod of the node targets, the shard-local rules), one AIOps service per shard, "
                   "VictoriaMetrics and vmalert for the global rules (docs/scaling.md).  [default: single]")
@click.option("--shards", type=click.IntRange(2, MAX_SHARDS),
              help="sharded: how many Prometheus shards (and AIOps services).  [default: 2]")
@click.option("--database-url", metavar="URL",
              help="ha: the notifiers' PostgreSQL, postgresql://USER@HOST:PORT/DB (default: a server in the run dir).")
@click.option("--detach", is_flag=True, help="Return once every component is healthy; stop later with `vigil down`.")
@click.option("--timeout", type=Duration(positive=True), default="120s", show_default=True,
              help="How long to wait for health (120, 2m …).")
@grafana_options(required=False)
@click.option(DETACHED_CHILD_FLAG, "detached_child", is_flag=True, hidden=True)  # set by --detach on its child
def up(run_dir, config_file, port_base, sim_nodes, sim_gpus, gpu_backend, scrape_interval, no_aiops, profile, shards,
       database_url, detach, timeout, grafana_url, grafana_token_file, grafana_insecure, detached_child):
    """Start Prometheus, Alertmanager, node_exporter, the GPU fleet, the notifier and AIOps on loopback;
    with --grafana-url, provision the dashboards into that Grafana once they are up (docs/dashboards.md)."""
    overrides = {"run_dir": run_dir, "port_base": port_base, "sim_nodes": sim_nodes, "sim_gpus": sim_gpus,
                 "scrape_interval": scrape_interval, "evaluation_interval": scrape_interval,
                 "aiops": False if no_aiops else None, "profile": profile, "shards": shards, "database_url": database_url,
                 "grafana_url": grafana_url}
    try:
        settings = load_settings(config_file, overrides)
    except SettingsError as exc:
        raise click.ClickException(str(exc)) from None
    grafana = grafana_target(grafana_url, grafana_token_file, grafana_insecure) if grafana_url else None
    if detach:
        try:
            start_detached(sys.argv[1:], settings.run_path, timeout, say=click.echo)
        except StackError as exc:
            raise click.ClickException(str(exc)) from None
        return
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    try:
        code = run_stack(settings, gpu_backend, say=click.echo, health_timeout_s=timeout, detached=detached_child,
                         on_up=provision_when_up(grafana, settings.scrape_interval, settings.run_path) if grafana else None)
    except (StackError, MissingBinaries) as exc:
        raise click.ClickException(str(exc)) from None
    except KeyboardInterrupt:  # Ctrl-C before the supervisor took over (e.g. during the backfill)
        click.echo("interrupted", err=True)
        code = 130
    sys.exit(code)


@click.command()
@run_dir_option
@click.option("--timeout", type=Duration(positive=True), default="30s", show_default=True,
              help="How long to wait for the stack to stop (a stack still running then: exit 1).")
def down(run_dir, timeout):
    """Stop a stack started with `vigil up --detach`. Nothing running in the run directory is not an
    error (exit 0, said on one line); a state file left by a crashed supervisor is removed."""
    try:
        click.echo(stop_stack(run_dir, timeout))
    except StopFailed as exc:
        raise click.ClickException(str(exc)) from None


@click.command()
@run_dir_option
@click.option("--json", "as_json", is_flag=True, help="Print JSON: {\"components\": {name: {url, healthy}}}.")
def status(run_dir, as_json):
    """Show each component's URL and health."""
    try:
        state = read_state(run_dir)
    except NoStack as exc:
        if as_json:
            click.echo(json.dumps({"components": {}, "error": str(exc)}))
            sys.exit(1)
        raise click.ClickException(str(exc)) from None
    health = {name: is_healthy(c.health_url) for name, c in state.components.items()}
    if as_json:
        click.echo(json.dumps({"components": {n: {"url": c.url, "healthy": health[n]} for n, c in state.components.items()}}, indent=2))
    else:
        width = max(len(n) for n in state.components)
        click.echo(f"{'component':<{width}}  {'health':<9}  url")
        for name, comp in state.components.items():
            click.echo(f"{name:<{width}}  {'healthy' if health[name] else 'UNHEALTHY':<9}  {comp.url}")
    sys.exit(0 if all(health.values()) else 1)
