"""`vigil postmortem INCIDENT [--format md|html|pdf] [--output FILE] [--templates DIR]`: a near-finished
postmortem of an incident of the running stack (found through `--run-dir`, like `vigil incidents`).

The incident, its timeline, pages and SLA come from the notifier's REST API (with the stack's token);
the charts, the first sign of the fault and the jobs on the affected GPUs from the stack's Prometheus.
With `--output x.md` the charts are written next to it (`x-chart-1.png` …) and linked; otherwise they
are embedded as data URLs.

On a stopped stack (after `vigil down`) the incident comes from the run directory's notifier database
(`vigil.stack.stopped`) and the metrics from a temporary Prometheus on its TSDB (`vigil.stack.tsdb_readback`);
when that cannot be started the postmortem is written without charts, saying why. It stands as of when the
stack stopped (`StoppedStack.stopped_at()`): an incident still open then is measured up to that moment and
said to be open when the stack stopped, not now.
"""

from __future__ import annotations

import os
import sys
import time
from contextlib import nullcontext
from pathlib import Path

import click

from vigil.common.click_types import RowNumber
from vigil.common.prometheus_api import PrometheusClient
from vigil.notifier.postmortem import CONTENT_TYPES, TemplateProblem, gather, render

from vigil.cli.options import call_notifier, run_dir_option
from vigil.stack.client import StackClient
from vigil.stack.stopped import StoppedStack
from vigil.stack.tsdb_readback import read_back

# related incidents are searched among the newest this many
RELATED_SEARCH_LIMIT = 5000
# where a chart's image would be in Markdown printed on a terminal (`![title](#…)`)
TERMINAL_CHART = "#chart-left-out-on-a-terminal"


@click.command()
@run_dir_option
@click.argument("incident_id", metavar="INCIDENT", type=RowNumber("incident"))
@click.option("--format", "fmt", type=click.Choice(list(CONTENT_TYPES)), default=None,
              help="Output format  [default: from --output's suffix, else md]")
@click.option("--output", "-o", type=click.Path(dir_okay=False, path_type=Path),
              help="Write here instead of standard output.")
@click.option("--templates", type=click.Path(exists=True, file_okay=False, path_type=Path),
              envvar="VIGIL_POSTMORTEM_TEMPLATES", show_envvar=True,
              help="Folder of Jinja2 templates that replace the shipped ones (postmortem.md.j2, postmortem.html.j2).")
def postmortem(run_dir, incident_id, fmt, output, templates):
    """Write the postmortem of INCIDENT from its alerts, timeline, pages and metrics (Google SRE template)."""
    if fmt is None:
        suffix = output.suffix.lstrip(".").lower() if output else ""
        fmt = {"markdown": "md", "htm": "html"}.get(suffix, suffix) if suffix in {*CONTENT_TYPES, "markdown", "htm"} else "md"
    if fmt == "pdf" and (sys.stdout.isatty() if output is None else is_terminal(output)):
        where = "give --output FILE.pdf (or redirect standard output)" if output is None else f"{output} is a terminal"
        raise click.UsageError(f"a PDF is not for a terminal: {where}")
    # a stopped stack's database (or its copy) is closed once call_notifier returns: its stop time is read inside
    client, incident, others, stopped_at = call_notifier(run_dir, lambda c: (
        c, c.incident(incident_id), c.incidents(RELATED_SEARCH_LIMIT),
        c.stopped_at() if isinstance(c, StoppedStack) else None), stopped_ok=True)
    with metrics_of(client, run_dir) as prometheus:
        found = gather(incident, others, prometheus, now=time.time(), stopped_at=stopped_at)
    if not isinstance(client, StackClient) and not found.facts.charts:
        problems = found.evidence.problems if found.evidence else []
        click.echo("no charts: " + ("; ".join(problems) or "Prometheus has no series of these alerts"), err=True)
    urls = None
    if fmt == "md" and output is None and found.facts.charts and sys.stdout.isatty():
        # a chart's PNG as a data URL is thousands of lines of base64 on a terminal: named, not embedded
        urls = [TERMINAL_CHART] * len(found.facts.charts)
        click.echo(f"{len(urls)} chart(s) left out on a terminal: -o FILE.md writes them beside it as PNGs, "
                   "--format html embeds them, and so does redirecting standard output", err=True)
    elif fmt == "md" and output is not None:
        urls = []
        for number, chart in enumerate(found.facts.charts, 1):
            image = output.with_name(f"{output.stem}-chart-{number}.png")
            _write(image, chart.png)
            urls.append(image.name)
    try:
        body = render(found, fmt, templates, chart_urls=urls)
    except TemplateProblem as exc:
        raise click.ClickException(f"postmortem template: {exc}") from None
    if output is None:
        sys.stdout.flush()
        sys.stdout.buffer.write(body)
        return
    _write(output, body)
    click.echo(f"wrote {output} ({fmt}, {len(found.facts.charts)} charts)", err=True)


def is_terminal(path: Path) -> bool:
    """`path` names a terminal (`/dev/tty`, a `/dev/pts/N` …): a PDF written there would garble it."""
    if os.path.realpath(path) == "/dev/tty":
        return True
    try:
        fd = os.open(path, os.O_WRONLY | os.O_NOCTTY | os.O_NONBLOCK)
    except OSError:
        return False  # not there yet (a file to create), or not ours to write: _write says so
    try:
        return os.isatty(fd)
    finally:
        os.close(fd)


def metrics_of(client, run_dir: Path):
    """A context giving the Prometheus to read the incident's metrics from: the running stack's, or on a
    stopped stack a temporary one on its TSDB (one that answers only why, when none can be had)."""
    if isinstance(client, StackClient):
        return nullcontext(PrometheusClient(client.prometheus, timeout=10))
    return read_back(run_dir)


def _write(path: Path, data: bytes) -> None:
    try:
        path.write_bytes(data)
    except OSError as exc:
        raise click.ClickException(f"cannot write {path}: {exc.strerror or exc}") from None
