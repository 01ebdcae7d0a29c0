"""`vigil chaos` and `vigil drill`: break the simulated fleet on purpose and watch the page arrive."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click
import requests

from vigil.common.click_types import Duration
from vigil.common.prometheus_api import PrometheusUnavailable
from vigil.exporters.sim.faults import DISK_FAULTS

from vigil.stack.drill import Drill, DrillFailed, StageResult, shipped_fault_expectations
from vigil.stack.runstate import NoStack
from vigil.stack.client import StackClient, StackRequestError

run_dir_option = click.option("--run-dir", type=click.Path(path_type=Path), default=Path(".vigil"), show_default=True,
                              help="Run directory of the stack to act on.")


def _client(run_dir: Path) -> StackClient:
    try:
        return StackClient.from_run_dir(run_dir)
    except NoStack as exc:
        raise click.ClickException(str(exc)) from None


def _control(run_dir: Path, method: str, path: str, body: dict | None = None) -> dict:
    try:
        return _client(run_dir).chaos(method, path, body)
    except StackRequestError as exc:
        raise click.ClickException(str(exc)) from None
    except requests.RequestException as exc:
        raise click.ClickException(f"cannot reach the simulated fleet's control API: {exc}") from None


@click.group()
def chaos():
    """Inject or clear faults in the simulated GPU fleet."""


@chaos.command()
@click.argument("fault")
@click.option("--node", required=True, help="Node name, e.g. node-2 (see `vigil chaos list`).")
@click.option("--gpu", type=int, default=0, show_default=True, help="GPU index on the node.")
@click.option("--param", "params", multiple=True, metavar="KEY=VALUE", help="Extra fault parameter (e.g. count=5).")
@run_dir_option
def inject(fault, node, gpu, params, run_dir):
    """Inject FAULT (xid79, ecc-dbe, overheat, node-down, ecc-storm, xid-burst, disk-failing, …).

    disk-failing takes the disk index as a parameter: --param disk=1 (default 0; odd indexes are NVMe).
    job-hang hangs the job holding the GPU (`vigil chaos list` shows the jobs running and their GPUs)."""
    body = {"fault": fault, "node": node, "gpu": gpu}
    for item in params:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise click.BadParameter(f"{item!r} is not KEY=VALUE", param_hint="--param")
        body[key] = int(value) if value.isdigit() else value
    result = _control(run_dir, "POST", "/chaos/inject", body)
    click.echo(f"injected {fault} on {_where(result.get('fault', body))}: {json.dumps(result.get('fault', {}))}")


def _where(fault: dict) -> str:
    """node-2 GPU 3, node-2 (a node fault) or node-2 disk 0 (a disk fault)."""
    if "disk" in fault or fault.get("fault") in DISK_FAULTS:
        return f"{fault['node']} disk {fault.get('disk', 0)}"
    where = fault["node"] + ("" if fault.get("gpu") is None else f" GPU {fault['gpu']}")
    return where + (f" (job {fault['job_id']})" if fault.get("job_id") else "")


@chaos.command()
@click.option("--node", help="Clear only this node's faults (default: all).")
@run_dir_option
def clear(node, run_dir):
    """Clear faults (models a GPU reset / node back)."""
    result = _control(run_dir, "POST", "/chaos/clear", {"node": node} if node else {})
    click.echo(f"cleared {result.get('cleared', 0)} fault(s)")


@chaos.command(name="list")
@run_dir_option
def list_(run_dir):
    """List the simulated nodes and the active faults."""
    result = _control(run_dir, "GET", "/chaos")
    for node in result.get("nodes", []):
        click.echo(f"{node['name']:<10} {node['gpus']} GPUs  {node['url']}")
    for job in result.get("jobs", []):
        gpus = " ".join(f"{g['node']}/{g['gpu']}" + ("" if g["activity"] == "running" else f"({g['activity']})")
                        for g in job["gpus"])
        click.echo(f"job {job['job_id']:<18} {job['tenant']}/{job['user']:<8} {gpus}")
    faults = result.get("faults", [])
    click.echo("active faults: " + (", ".join(f"{f['fault']}@{_where(f)}" for f in faults) or "none"))


@click.command()
@click.argument("fault", metavar="FAULT", type=click.Choice(sorted(shipped_fault_expectations())))
@click.option("--node", required=True, help="Node name, e.g. node-2.")
@click.option("--gpu", type=int, default=0, show_default=True)
@click.option("--timeout", type=Duration(positive=True), default="120s", show_default=True,
              help="Time allowed per stage.")
@click.option("--json", "as_json", is_flag=True, help="Print the stage timings as JSON.")
@click.option("--no-ack", is_flag=True,
              help="Leave the first page unanswered: wait until the escalation pages the next tier, then acknowledge.")
@run_dir_option
def drill(fault, node, gpu, timeout, as_json, no_ack, run_dir):
    """Inject FAULT, wait for the page, acknowledge it as its recipient, clear the fault, wait for the
    resolution; print each stage's time and who was paged through which channel and tier.

    FAULT is a simulator fault that a rule spec names in its `drill:` key; that rule's alert is awaited.
    With --no-ack nobody answers the first page, so the policy's wait runs out and the next tier is paged.
    """
    expect = shipped_fault_expectations()[fault]
    if no_ack and expect.ticket:
        raise click.UsageError(f"{fault} raises {expect.alertname}, which files a ticket: a ticket is never "
                               "escalated, so --no-ack has no next tier to wait for")
    apis = _client(run_dir)
    if apis.gpu_control is None:
        raise click.ClickException("this stack exports real GPUs (NVML); drills need the simulated fleet")

    def report(result: StageResult) -> None:
        if not as_json:
            detail = f": {result.detail}" if result.detail else ""
            click.echo(f"  {result.seconds:7.2f}s  {result.name}{detail}")

    if not as_json:
        where = f"{node} GPU {gpu}" if expect.per_gpu else node
        where = f"the job holding {where}" if expect.per_job else where
        click.echo(f"drill: {fault} on {where} (expecting {expect.alertname})")
    runner = Drill(apis, expect, node, gpu, stage_timeout_s=timeout, report=report, acknowledge=not no_ack)
    try:
        results = runner.run()
    except DrillFailed as exc:
        if as_json:
            click.echo(json.dumps({"ok": False, "error": str(exc), "stages": [r.__dict__ for r in runner.results]}))
            sys.exit(1)
        raise click.ClickException(f"drill failed: {exc}") from None
    except (requests.RequestException, PrometheusUnavailable) as exc:
        raise click.ClickException(f"cannot reach the stack: {exc}") from None
    if as_json:
        job = {"job_id": runner.job_id} if expect.per_job else {}
        click.echo(json.dumps({"ok": True, "fault": fault, "node": node, "gpu": gpu, **job,
                               "stages": [r.__dict__ for r in results]}))
    else:
        done = "ticket filed and resolved" if expect.ticket else "page and resolution delivered"
        click.echo(f"drill passed: {done} for {fault}")
