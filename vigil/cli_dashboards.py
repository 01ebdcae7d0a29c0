"""`vigil dashboards build [--output DIR] [--check]` and `vigil dashboards check [FILES]`: the Grafana
dashboards generated from Python (docs/dashboards.md) and the offline checks of dashboard JSON."""

from __future__ import annotations

import json
from pathlib import Path

import click

from vigil.dashboards.build import DEFAULT_OUTPUT, DEFAULT_PROMETHEUS_URL, GRAFANA_VERSION, render, stale, write
from vigil.common.click_types import Duration
from vigil.dashboards.check import check_dashboards

_DIR = click.Path(path_type=Path, file_okay=False)


def _fail_on(problems) -> None:
    if problems:
        count = len(problems)
        raise click.ClickException(f"{count} problem{'s' if count != 1 else ''} in the dashboards:\n"
                                   + "\n".join(str(problem) for problem in problems))


@click.group(name="dashboards")
def dashboards():
    """Grafana dashboards as code: fleet, node, GPU, job and the stack's own health (docs/dashboards.md)."""


@dashboards.command()
@click.option("-o", "--output", type=_DIR, default=DEFAULT_OUTPUT, show_default="the checked-in dashboards/ folder",
              help="Folder to write json/*.json and provisioning/ into.")
@click.option("--check", "check_only", is_flag=True,
              help="Write nothing; exit 1 when a file under --output differs from what would be generated.")
@click.option("--prometheus-url", default=DEFAULT_PROMETHEUS_URL, show_default=True,
              help="URL of Prometheus in the datasource provisioning file (as Grafana's server reaches it).")
def build(output: Path, check_only: bool, prometheus_url: str):
    """Generate the dashboards (Grafana {version}) and provisioning files; the offline checks run first."""
    files = render(prometheus_url)
    _fail_on(check_dashboards({path: json.loads(text) for path, text in files.items() if path.endswith(".json")}))
    if check_only:
        changed = stale(output, files)
        if changed:
            raise click.ClickException(f"{len(changed)} stale file(s) under {output} (run `vigil dashboards build`):\n"
                                       + "\n".join(changed))
        click.echo(f"OK: {len(files)} files under {output} are up to date")
        return
    try:
        written = write(output, files)
    except OSError as exc:
        raise click.ClickException(f"cannot write under {output}: {exc.strerror}") from None
    click.echo(f"wrote {len(written)} files under {output}")


build.help = build.help.format(version=GRAFANA_VERSION)


@dashboards.command()
@click.argument("files", nargs=-1, type=click.Path(path_type=Path, dir_okay=False, exists=True))
def check(files: tuple[Path, ...]):
    """Check dashboard JSON FILES (default: the generated dashboards) without Grafana: panel ids, grid, units,
    datasource uid, variables, links, and every query against PromQL's grammar and the metric catalog."""
    if files:
        models, unreadable = {}, []
        for path in files:
            try:
                models[str(path)] = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
                unreadable.append(f"{path}: not a dashboard JSON file: {exc}")
        if unreadable:  # every unreadable file at once, not only the first
            raise click.ClickException("\n".join(unreadable))
    else:
        models = {path: json.loads(text) for path, text in render().items() if path.endswith(".json")}
    _fail_on(check_dashboards(models))
    click.echo(f"OK: {len(models)} dashboards pass the offline checks")


@dashboards.command()
@click.option("--prometheus-url", default=DEFAULT_PROMETHEUS_URL, show_default=True,
              help="The Prometheus to fill the panels from (a running `vigil up` stack's).")
@click.option("-o", "--output", type=_DIR, default=Path("docs/img/dashboards"), show_default=True,
              help="Folder to write <uid>.png into.")
@click.option("--window", type=Duration(), default="10m", show_default=True, help="Time range of the graphs.")
def preview(prometheus_url: str, output: Path, window: float):
    """Draw each dashboard to PNG from live data (matplotlib, laid out on the dashboard's grid): what an SRE
    would see in Grafana, without Grafana."""
    from vigil.common.prometheus_api import PrometheusClient, PrometheusUnavailable
    from vigil.dashboards.build import dashboard_models
    from vigil.dashboards.preview import render_png

    client = PrometheusClient(prometheus_url)
    try:
        output.mkdir(parents=True, exist_ok=True)
        for model in dashboard_models():
            png, drawn, with_data = render_png(model, client, window_s=window)
            (output / f"{model['uid']}.png").write_bytes(png)
            click.echo(f"{output / (model['uid'] + '.png')}: {with_data} of {drawn} panels with data")
    except PrometheusUnavailable as exc:
        raise click.ClickException(str(exc)) from None
    except OSError as exc:
        raise click.ClickException(f"cannot write under {output}: {exc.strerror}") from None
