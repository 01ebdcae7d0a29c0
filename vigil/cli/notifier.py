"""`vigil notifier …`: run the notifier that receives Alertmanager webhooks and pages the on-call."""

from __future__ import annotations

import logging
import time
from pathlib import Path

import click
from pydantic import ValidationError

from vigil.common.click_types import Duration, HostPort, HttpUrl
from vigil.common.durations import format_duration
from vigil.notifier.settings import DEFAULT_MAX_BODY_BYTES, DEFAULT_RESOLVE_GONE_AFTER_S
from vigil.common.times import people_time as when

from vigil.cli.options import call_notifier, json_option, notifier_options, printed_plainly



def _redact(url: str) -> str:
    """`url` without its password, for error messages."""
    scheme, sep, rest = url.partition("://")
    credentials, at, host = rest.rpartition("@")
    if not at or ":" not in credentials:
        return url
    return f"{scheme}{sep}{credentials.split(':', 1)[0]}:***@{host}"


def _first_line(exc: Exception) -> str:
    text = str(getattr(exc, "orig", None) or exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _heartbeats(ctx, param, values: tuple[str, ...]) -> tuple:
    """A click callback: the `--heartbeat` specs, every malformed one named at once."""
    from vigil.notifier.heartbeat_spec import parse_heartbeat

    specs, problems = [], []
    for value in values:
        try:
            specs.append(parse_heartbeat(value))
        except ValueError as exc:
            problems.append(str(exc))
    if problems:
        raise click.BadParameter("; ".join(problems), ctx=ctx, param=param)
    return tuple(specs)


@click.group()
def notifier():
    """The notifier: Alertmanager webhook receiver, incidents, pages and the local inbox."""


@notifier.command()
@click.option("--listen", default="127.0.0.1:9095", show_default=True, type=HostPort(),
              help="HOST:PORT to listen on ([::1]:PORT for IPv6).")
@click.option("--db", "db_url", default="sqlite:///notifier.db", show_default=True,
              help="sqlite:///PATH or postgresql://USER:PASS@HOST/DB.")
@click.option("--token-file", type=click.Path(dir_okay=False, path_type=Path), required=True,
              help="File whose first line is the bearer token every /api/ request must carry.")
@click.option("--oncall-config", type=click.Path(dir_okay=False, path_type=Path), required=True,
              help="On-call YAML: targets, channels, routes (see docs/notifier.md).")
@click.option("--alertmanager-url", default=None,
              help="Alertmanager to reconcile with at start (GET /api/v2/alerts/groups).")
@click.option("--alertmanager-receiver", default=None,
              help="Reconcile only groups routed to this Alertmanager receiver (default: all).")
@click.option("--resolve-gone-after", "resolve_gone_after_s", type=Duration(positive=True),
              default=format_duration(DEFAULT_RESOLVE_GONE_AFTER_S),
              show_default=True, help="Resolve a firing incident none of whose alerts --alertmanager-url has held "
                                      "this long (their resolution was lost, e.g. while the stack was down).")
@click.option("--public-url", default=None,
              help="URL at which the notifier reaches itself for inbox pages (default: the --listen address).")
@click.option("--grafana-url", type=HttpUrl(), default=None,
              help="Grafana with vigil's dashboards: firing pages link to the dashboard of what broke.")
@click.option("--prometheus", "--prometheus-url", "prometheus_url", type=HttpUrl(), default=None,
              help="Prometheus to chart an incident's metrics from in its postmortem (docs/postmortems.md).")
@click.option("--postmortem-templates", type=click.Path(exists=True, file_okay=False, path_type=Path), default=None,
              help="Folder of Jinja2 templates replacing the shipped postmortem templates.")
@click.option("--console-templates", type=click.Path(exists=True, file_okay=False, path_type=Path), default=None,
              help="Folder of Jinja2 templates replacing the web console's pages of the same name (docs/console.md).")
@click.option("--header-timeout", "header_timeout_s", type=Duration(positive=True), default="10s", show_default=True,
              help="A request's headers must arrive within this from its first byte, else 408 and the connection closed.")
@click.option("--body-timeout", "body_timeout_s", type=Duration(positive=True), default="30s", show_default=True,
              help="A request's body must arrive within this after its headers, else the connection is closed.")
@click.option("--max-connections-per-client", type=click.IntRange(min=1), default=100, show_default=True,
              help="Connections one client address may hold at once; more are answered 429 and closed.")
@click.option("--vapid-key", "vapid_key_file", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Web Push: the VAPID private key (PEM), made there on first start; notifiers on one database "
                   "share it (docs/oncall.md, Web Push). Without it `push` contacts fall back at once.")
@click.option("--vapid-subject", default="mailto:root@localhost", show_default=True,
              help="Web Push: a mailto: or https:// URL the push services may contact about this sender.")
@click.option("--log-level", type=click.Choice(["debug", "info", "warning", "error"]), default="info",
              show_default=True)
@click.option("--max-body-bytes", type=click.IntRange(min=1024), default=DEFAULT_MAX_BODY_BYTES, show_default=True,
              help="Refuse request bodies larger than this with 413 (Alertmanager: bound it with max_alerts).")
@click.option("--workers", type=click.IntRange(min=1), default=1, show_default=True,
              help="Server processes on the one port and database (use the machine's cores; see docs/benchmarks.md).")
@click.option("--heartbeat", "heartbeats", multiple=True, callback=_heartbeats, metavar="NAME=TIMEOUT[,LABEL=VALUE...]",
              help="Watch POST /api/v1/heartbeat/NAME: page (an incident with these labels) when it is not heard "
                   "for TIMEOUT, e.g. watchdog=5m,team=platform (repeatable; docs/notifier.md, Heartbeats).")
def serve(listen, db_url, token_file, oncall_config, alertmanager_url, alertmanager_receiver, resolve_gone_after_s,
          public_url, grafana_url, prometheus_url, postmortem_templates, console_templates, header_timeout_s,
          body_timeout_s, max_connections_per_client, vapid_key_file, vapid_subject, log_level, max_body_bytes, workers,
          heartbeats):
    """Serve the notifier API in the foreground."""
    from vigil.notifier.settings import NotifierSettings, is_loopback, others_can_read, read_token_file
    from vigil.oncall.loader import OncallConfigError, load_oncall

    host, port = listen
    try:
        token = read_token_file(token_file)
    except (OSError, ValueError) as exc:
        raise click.ClickException(f"cannot read --token-file: {getattr(exc, 'strerror', None) or exc}")
    try:
        settings = NotifierSettings(host=host, port=port, db_url=db_url, token=token,
                                    oncall_config=oncall_config, alertmanager_url=alertmanager_url,
                                    alertmanager_receiver=alertmanager_receiver, public_url=public_url,
                                    grafana_url=grafana_url,
                                    resolve_gone_after_s=resolve_gone_after_s,
                                    max_body_bytes=max_body_bytes, heartbeats=heartbeats,
                                    prometheus_url=prometheus_url, postmortem_templates=postmortem_templates,
                                    console_templates=console_templates, vapid_key_file=vapid_key_file,
                                    header_timeout_s=header_timeout_s, body_timeout_s=body_timeout_s,
                                    max_connections_per_client=max_connections_per_client,
                                    vapid_subject=vapid_subject)
    except ValidationError as exc:
        raise click.ClickException("; ".join(f"{'.'.join(map(str, e['loc'])) or 'settings'}: "
                                             f"{e['msg'].removeprefix('Value error, ')}" for e in exc.errors()))
    try:
        oncall = load_oncall(settings.oncall_config)
    except OncallConfigError as exc:
        raise click.ClickException(f"invalid on-call config:\n{exc}")

    # logging (with the secret mask) first, so the schema upgrade that opening the store runs is logged
    logging.basicConfig(level=log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    from vigil.notifier.log_mask import mask_secrets_in_logs, notifier_secrets

    mask_secrets_in_logs(notifier_secrets(settings, oncall))

    from vigil.notifier.store import Store

    try:  # open (and upgrade) the database now, so a wrong --db is a clear error, not a server traceback
        Store(settings.db_url).close()
    except Exception as exc:
        raise click.ClickException(f"cannot open --db {_redact(settings.db_url)}: {_first_line(exc)}")

    if settings.vapid_key_file is not None:  # made now, so a bad one is a clear error, not a server traceback
        from vigil.notifier.delivery.webpush import VapidKey

        try:
            VapidKey.load_or_create(settings.vapid_key_file)
        except (OSError, ValueError) as exc:
            raise click.ClickException(f"--vapid-key: {getattr(exc, 'strerror', None) or exc}")
    if others_can_read(token_file):
        logging.getLogger("vigil.notifier").warning(
            "--token-file %s is readable by other users (mode %o): anyone who reads it can post alerts and "
            "read incidents; make it owner-only with: chmod 600 %s", token_file, token_file.stat().st_mode & 0o777,
            token_file)
    if not is_loopback(host):
        logging.getLogger("vigil.notifier").warning(
            "listening on %s over plain HTTP: the bearer token crosses the network in clear; "
            "put a TLS proxy in front", host)

    import uvicorn

    from vigil.notifier.app import create_app
    from vigil.notifier.slow_clients import GuardedHttpTools

    GuardedHttpTools.configure(settings)  # header and body deadlines, the per-client cap

    if workers > 1:  # each process builds its own app (and store, worker) from what the parent parsed
        from vigil.notifier.serve_workers import FACTORY, export_args

        export_args(settings, token_file, log_level)
        uvicorn.run(FACTORY, factory=True, workers=workers, host=host, port=port, log_level=log_level,
                    access_log=False, log_config=None, http=GuardedHttpTools)
        return
    from vigil.notifier.serve_workers import freeze_startup_heap

    app = create_app(settings, oncall)
    freeze_startup_heap()
    # log_config=None: uvicorn logs through the root handlers above, and so through the secret mask
    uvicorn.run(app, host=host, port=port, log_level=log_level, access_log=False, log_config=None,
                http=GuardedHttpTools)


@notifier.command()
@notifier_options
@json_option
def heartbeats(run_dir, as_json):
    """The heartbeats the running stack's notifier watches: state, last beat, timeout, open incident."""
    found = call_notifier(run_dir, lambda client: client.heartbeats())
    if printed_plainly("heartbeats", found, as_json):
        return
    click.echo(f"{'NAME':<16} {'STATE':<8} {'LAST HEARD (UTC)':<20} {'TIMEOUT':>8} {'SILENT':>8}  INCIDENT")
    for beat in found:
        silent = "-" if beat["silent_for_s"] is None else format_duration(round(beat["silent_for_s"]))
        incident = str(beat["incident_id"]) if beat["state"] == "missing" else "-"
        click.echo(f"{beat['name']:<16} {beat['state']:<8} {when(beat['last_seen_at']):<20} "
                   f"{format_duration(beat['timeout_s']):>8} {silent:>8}  {incident}")


@notifier.command("check-oncall")
@click.argument("path", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--weeks", type=click.IntRange(min=1), default=4, show_default=True,
              help="How far ahead to look for coverage gaps.")
def check_oncall(path, weeks):
    """Validate an on-call file as `vigil oncall check` does: every mistake and every coverage gap over the
    next --weeks as FILE:LINE: message (exit 1), else what it defines."""
    from vigil.oncall.check import check_file

    checked = check_file(path, "now", time.time(), weeks)
    if not checked.ok:
        raise click.ClickException("invalid on-call config:\n" + "\n".join(checked.problems + checked.gaps)
                                   + f"\n{checked.summary(weeks)}")
    click.echo(f"{path}: ok: " + ", ".join(_oncall_summary(checked.config)) + f"; {checked.summary(weeks)}")


def _oncall_summary(config) -> list[str]:
    """What the file defines, in counts: the second version's people and policies, or the first's targets."""
    if config.people or not config.targets:
        contacts = sum(len(person.contacts) for person in config.people.values())
        default = config.default_policy or "(none: alerts no route matches page nobody)"
        return [f"{len(config.people)} person(s)", f"{contacts} contact(s)", f"{len(config.teams)} team(s)",
                f"{len(config.schedules)} schedule(s)", f"{len(config.policies)} {'policy' if len(config.policies) == 1 else 'policies'}",
                f"{len(config.routes)} route(s)", f"default policy {default}"]
    channels = sum(len(target.channels) for target in config.targets.values())
    return [f"{len(config.targets)} target(s)", f"{channels} channel(s)", f"{len(config.routes)} route(s)",
            f"default {config.default or '(none: unrouted alerts page nobody)'}"]


@notifier.command()
@click.option("--db", "db_url", default="sqlite:///notifier.db", show_default=True,
              help="sqlite:///PATH or postgresql://USER:PASS@HOST/DB.")
@click.option("--check", is_flag=True,
              help="Change nothing: print the database's schema revision and the newest; exit 1 if an upgrade is pending.")
def migrate(db_url, check):
    """Upgrade the notifier database to this vigil's schema (`serve` also does it at start)."""
    from vigil.notifier.migrate import schema_state, upgrade_database
    from vigil.notifier.store import engine_for

    shown = _redact(db_url)
    missing = _missing_sqlite_file(db_url)
    if check and missing:
        raise click.ClickException(f"no database file at {missing} (--check creates none)")
    try:
        engine = engine_for(db_url)
        try:
            state, now = (schema_state(engine), None) if check else upgrade_database(engine)
        finally:
            engine.dispose()
    except Exception as exc:
        raise click.ClickException(f"cannot migrate --db {shown}: {_first_line(exc)}")
    if check:
        verdict = "up to date" if state.up_to_date else f"upgrade pending: run `vigil notifier migrate --db {shown}`"
        click.echo(f"{shown}: schema at {state.describe_current()}, newest {state.head}: {verdict}")
        if not state.up_to_date:
            raise SystemExit(1)
    elif state.up_to_date:
        click.echo(f"{shown}: schema at {now}: up to date, nothing to do")
    else:
        click.echo(f"{shown}: schema upgraded from {state.describe_current()} to {now}")


def _missing_sqlite_file(db_url: str) -> str | None:
    path = db_url.removeprefix("sqlite:///").partition("?")[0] if db_url.startswith("sqlite:///") else ""
    return path if path and path != ":memory:" and not Path(path).exists() else None
