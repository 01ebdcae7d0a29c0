"""`vigil dashboards build [--output DIR] [--check]`, `check [FILES]`, `preview`, `coverage` and `provision`: the Grafana
dashboards generated from Python (docs/dashboards.md), the offline checks of dashboard JSON, and putting
them into a running Grafana over its API (also what `vigil up --grafana-url` does once the stack is up)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable

import click

from vigil.common.click_types import Duration, HttpUrl
from vigil.common.generated_files import write_or_check
from vigil.dashboards.build import DEFAULT_OUTPUT, DEFAULT_PROMETHEUS_URL, GRAFANA_VERSION, render
from vigil.dashboards.check import check_dashboards

_DIR = click.Path(path_type=Path, file_okay=False)


def grafana_options(required: bool):
    """--grafana-url, --grafana-token-file and --grafana-insecure (`vigil up` and `vigil dashboards provision`)."""
    def decorate(command):
        options = [
            click.option("--grafana-url", envvar="VIGIL_GRAFANA_URL", required=required, metavar="URL",
                         help="Grafana to provision the dashboards and the Prometheus datasource into (its root "
                              "URL; also $VIGIL_GRAFANA_URL)."),
            click.option("--grafana-token-file", type=click.Path(path_type=Path, dir_okay=False), metavar="FILE",
                         help="File holding Grafana's API token (owner-only); without it, $VIGIL_GRAFANA_TOKEN. "
                              "Role: Admin (Editors may not change datasources)."),
            click.option("--grafana-insecure", is_flag=True,
                         help="Allow an http:// --grafana-url on another host (the token then crosses the network "
                              "in clear)."),
        ]
        for option in reversed(options):
            command = option(command)
        return command
    return decorate


def grafana_target(url: str, token_file: Path | None, insecure: bool):
    """The checked URL and token, or a ClickException that says what is wrong (nothing is sent yet)."""
    from vigil.dashboards.grafana_provision import ProvisionError
    from vigil.dashboards.grafana_provision import grafana_target as target

    try:
        return target(url, token_file, insecure)
    except ProvisionError as exc:
        raise click.ClickException(str(exc)) from None


def stack_prometheus(state) -> str:
    """The stack's global query view (VictoriaMetrics in the ha and sharded profiles: a shard holds only
    its part of the fleet), else its Prometheus (`prometheus`, or the first `prometheus…`)."""
    if state.urls.get("metrics_query"):
        return state.urls["metrics_query"]
    names = sorted(name for name in state.components if name.startswith("prometheus"))
    if not names:
        raise click.ClickException("the stack in the run directory has no Prometheus; give --prometheus-url")
    return state.components["prometheus" if "prometheus" in names else names[0]].url


def provision_when_up(target, scrape_interval_s: float, run_dir: Path) -> Callable:
    """The step `vigil up --grafana-url` runs once every component is healthy: provision, say what was done.
    A failure is said loudly and leaves the stack running; nothing here raises."""
    from vigil.dashboards.grafana_provision import ProvisionError, fleet_url, provision

    def on_up(state, say: Callable[[str], None]) -> None:
        say(f"\nprovisioning the dashboards into Grafana at {target.url} …")
        try:
            done = provision(target, stack_prometheus(state), f"{scrape_interval_s:g}s")
        except Exception as exc:  # noqa: BLE001 — a Grafana problem must never take the stack down
            reason = str(exc) if isinstance(exc, (ProvisionError, click.ClickException)) else f"{type(exc).__name__}: {exc}"
            say(f"!!! GRAFANA PROVISIONING FAILED: {reason}\n"
                f"!!! the stack keeps running; once fixed: vigil dashboards provision --run-dir {run_dir} "
                f"--grafana-url {target.url}")
            return
        say("\n".join(f"  {item.line()}" for item in done))
        say(f"fleet dashboard: {fleet_url(done)}")
    return on_up


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
@click.option("--prometheus", "--prometheus-url", "prometheus_url", type=HttpUrl(), default=DEFAULT_PROMETHEUS_URL, show_default=True,
              help="URL of Prometheus in the datasource provisioning file (as Grafana's server reaches it).")
def build(output: Path, check_only: bool, prometheus_url: str):
    """Generate the dashboards (Grafana {version}) and provisioning files; the offline checks run first."""
    files = render(prometheus_url)
    _fail_on(check_dashboards({path: json.loads(text) for path, text in files.items() if path.endswith(".json")}))
    write_or_check(output, files, check_only, "vigil dashboards build", owned="json/*.json")


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
                model = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
                unreadable.append(f"{path}: not a dashboard JSON file: {exc}")
                continue
            if isinstance(model, dict):
                models[str(path)] = model
            else:
                unreadable.append(f"{path}: not a dashboard JSON file: a JSON {type(model).__name__}, not an object")
        if unreadable:  # every unreadable file at once, not only the first
            raise click.ClickException("\n".join(unreadable))
    else:
        models = {path: json.loads(text) for path, text in render().items() if path.endswith(".json")}
    _fail_on(check_dashboards(models))
    click.echo(f"OK: {len(models)} dashboards pass the offline checks")


def _variables(pairs: tuple[str, ...]) -> dict[str, str]:
    chosen = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name.strip() or not value.strip():
            raise click.BadParameter(f"{pair!r}: expected NAME=VALUE, e.g. node=node-3", param_hint="--var")
        chosen[name.strip()] = value.strip()
    return chosen


def _stack_client(run_dir: Path):
    """The client of the stack running in `run_dir` (its URLs from the run state), or None."""
    from vigil.stack.client import StackClient
    from vigil.stack.runstate import NoStack

    try:
        return StackClient.from_run_dir(run_dir)
    except NoStack:
        return None


def _stack_focus(run_dir: Path) -> tuple[str | None, dict[str, str], str]:
    """(the stack's Prometheus URL, the node and GPU of its newest open incident, what was chosen) of the
    stack running in `run_dir`; (None, {}, "") when none runs there."""
    import requests

    from vigil.stack.client import StackRequestError

    client = _stack_client(run_dir)
    if client is None:
        return None, {}, ""
    try:
        open_ones = [i for i in client.incidents(200) if i.get("state") != "resolved" and i.get("part_of") is None
                     and (i.get("labels") or {}).get("node")]
    except (requests.RequestException, ValueError, StackRequestError):  # the notifier cannot say: the first values
        return client.prometheus, {}, ""
    if not open_ones:
        return client.prometheus, {}, ""
    on_gpu = [i for i in open_ones if (i.get("labels") or {}).get("gpu") not in (None, "")]
    newest = (on_gpu or open_ones)[-1]  # a GPU's fault before a node-wide one: the GPU dashboard shows it
    labels = newest["labels"]
    focus = {key: str(labels[key]) for key in ("node", "gpu") if labels.get(key) not in (None, "")}
    job = labels.get("job_id") or _job_on(client.prometheus, focus)
    if job:
        focus["job_id"] = str(job)
    return client.prometheus, focus, f"incident #{newest['id']} ({labels.get('alertname', '?')})"


def _job_on(prometheus_url: str, focus: dict[str, str]) -> str | None:
    """The training job holding the incident's GPU (`vigil_gpu_job` keeps a lost GPU in its job), if any:
    the job dashboard then opens on the job the fault stopped."""
    from vigil.common.prometheus_api import PrometheusClient, PrometheusUnavailable

    if "node" not in focus or "gpu" not in focus:
        return None
    selector = f'vigil_gpu_job{{node="{focus["node"]}", gpu="{focus["gpu"]}"}}'
    try:
        held = PrometheusClient(prometheus_url).query(selector)
    except PrometheusUnavailable:
        return None
    return sorted(sample.labels.get("job_id", "") for sample in held)[0] if held else None


@dashboards.command()
@click.option("--prometheus", "--prometheus-url", "prometheus_url", type=HttpUrl(), default=None,
              help="The Prometheus to fill the panels from.  [default: the stack's in --run-dir, else "
                   f"{DEFAULT_PROMETHEUS_URL}]")
@click.option("--run-dir", type=click.Path(path_type=Path), default=Path(".vigil"), show_default=True,
              help="Run directory of the `vigil up` stack to draw: its Prometheus, and its newest open incident's node "
                   "and GPU as the variables (what broke, not the first healthy node).")
@click.option("-o", "--output", type=_DIR, default=None,
              help="Folder to write <uid>.png into.  [default: RUN_DIR/dashboard-previews]")
@click.option("--var", "variables", multiple=True, metavar="NAME=VALUE",
              help="A dashboard variable's value, as Grafana's var-NAME (repeatable: --var node=node-3 --var gpu=5); "
                   "the others take their first value.")
@click.option("--window", type=Duration(), default="10m", show_default=True, help="Time range of the graphs.")
def preview(prometheus_url: str | None, run_dir: Path, output: Path | None, variables: tuple[str, ...], window: float):
    """Draw each dashboard to PNG from live data (matplotlib, laid out on the dashboard's grid): what an SRE
    would see in Grafana, without Grafana."""
    from vigil.common.prometheus_api import PrometheusClient, PrometheusUnavailable
    from vigil.dashboards.build import dashboard_models
    from vigil.dashboards.preview import render_png

    chosen = _variables(variables)
    stack_url, focus, why = _stack_focus(run_dir)
    if not chosen and focus:
        chosen = focus
        click.echo(f"showing {', '.join(f'{k}={v}' for k, v in focus.items())}: {why}, open")
    client = PrometheusClient(prometheus_url or stack_url or DEFAULT_PROMETHEUS_URL)
    output = output or run_dir / "dashboard-previews"
    try:
        client.query("vector(1)")  # unreachable: say so once, before drawing a board of red panels
        output.mkdir(parents=True, exist_ok=True)
        for model in dashboard_models():
            png, drawn, with_data, values = render_png(model, client, window_s=window, chosen=chosen)
            (output / f"{model['uid']}.png").write_bytes(png)
            shown = f" ({', '.join(f'{k}={v}' for k, v in values.items())})" if values else ""
            click.echo(f"{output / (model['uid'] + '.png')}: {with_data} of {drawn} panels with data{shown}")
    except PrometheusUnavailable as exc:
        raise click.ClickException(str(exc)) from None
    except OSError as exc:
        raise click.ClickException(f"cannot write under {output}: {exc.strerror}") from None


@dashboards.command()
@click.option("--prometheus", "--prometheus-url", "prometheus_url", type=HttpUrl(), default=None,
              help="The Prometheus to run the queries on.  [default: the stack's in --run-dir, else "
                   f"{DEFAULT_PROMETHEUS_URL}]")
@click.option("--run-dir", type=click.Path(path_type=Path), default=Path(".vigil"), show_default=True,
              help="Run directory of the `vigil up` stack whose Prometheus to ask.")
@click.option("--var", "variables", multiple=True, metavar="NAME=VALUE",
              help="A dashboard variable's value, as Grafana's var-NAME (repeatable); the others take their first "
                   "value, as Grafana does.")
@click.option("--json", "as_json", is_flag=True, help="Print every query and its result as JSON.")
def coverage(prometheus_url: str | None, run_dir: Path, variables: tuple[str, ...], as_json: bool):
    """Run every panel query as Grafana would and say which return data; each empty one with the reason it
    may be empty (a healthy fleet, a DCGM-only field, no InfiniBand), or as unexplained. Exit 1 when a
    query fails or is empty without a known reason."""
    from vigil.common.prometheus_api import PrometheusClient, PrometheusUnavailable
    from vigil.dashboards.build import dashboard_models
    from vigil.dashboards.live import allowed_empty, run_dashboard

    chosen = _variables(variables)
    stack = None if prometheus_url else _stack_client(run_dir)
    client = PrometheusClient(prometheus_url or (stack.prometheus if stack else DEFAULT_PROMETHEUS_URL))
    try:
        found = [r for model in dashboard_models() for r in run_dashboard(model, client, chosen)]
    except PrometheusUnavailable as exc:
        raise click.ClickException(str(exc)) from None
    with_data = sum(r.series > 0 for r in found)
    bad = [r for r in found if r.error or (r.series == 0 and not allowed_empty(r))]
    if as_json:
        click.echo(json.dumps({"queries": len(found), "with_data": with_data, "results": [
            {"dashboard": r.dashboard, "panel": r.panel, "ref": r.ref, "query": r.query, "series": r.series,
             "folded": r.folded,
             "error": r.error, "empty_because": allowed_empty(r) if r.series == 0 else None} for r in found]},
            indent=2))
    else:
        for r in found:
            if r.series == 0:
                why = r.error or allowed_empty(r) or "UNEXPLAINED: no data"
                click.echo(f"{r.dashboard} / {r.panel} ({r.ref}): {why}")
        opened = [r for r in found if not r.folded]
        opened_with_data = sum(r.series > 0 for r in opened)
        click.echo(f"{with_data} of {len(found)} panel queries return data ({with_data / max(1, len(found)):.0%}); "
                   f"as Grafana opens the dashboards (folded rows not queried): {opened_with_data} of {len(opened)} "
                   f"({opened_with_data / max(1, len(opened)):.0%}); {len(bad)} failed or empty without a reason")
    if bad:
        raise SystemExit(1)


@dashboards.command()
@grafana_options(required=True)
@click.option("--prometheus", "--prometheus-url", "prometheus_url", type=HttpUrl(), metavar="URL",
              help="Prometheus URL for the datasource, as Grafana's server reaches it.  "
                   "[default: the Prometheus of the stack running in --run-dir]")
@click.option("--run-dir", type=click.Path(path_type=Path), default=Path(".vigil"), show_default=True,
              help="Run directory of the `vigil up` stack whose Prometheus the datasource points at.")
def provision(grafana_url: str, grafana_token_file: Path | None, grafana_insecure: bool, prometheus_url: str | None,
              run_dir: Path):
    """Create or update, in a running Grafana, the Prometheus datasource (uid vigil-prometheus), the folder
    vigil and every dashboard (the API way; for provisioning files see docs/dashboards.md)."""
    from vigil.dashboards.grafana_provision import ProvisionError, fleet_url
    from vigil.dashboards.grafana_provision import provision as provision_into
    from vigil.stack.runstate import NoStack, read_state

    target = grafana_target(grafana_url, grafana_token_file, grafana_insecure)
    if prometheus_url is None:
        try:
            prometheus_url = stack_prometheus(read_state(run_dir))
        except NoStack as exc:
            raise click.ClickException(f"{exc}; or give --prometheus-url") from None
    try:
        done = provision_into(target, prometheus_url)
    except ProvisionError as exc:
        raise click.ClickException(str(exc)) from None
    for item in done:
        click.echo(item.line())
    click.echo(f"fleet dashboard: {fleet_url(done)}")
