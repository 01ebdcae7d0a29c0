"""`vigil maintenance list|add|end`: maintenance windows of the running stack's notifier. While a
window lasts, pages of incidents whose labels match it are recorded on the incident, not sent, and their
escalation pauses; it resumes when the window ends (docs/oncall.md)."""

from __future__ import annotations

from datetime import datetime, timezone
from zoneinfo import ZoneInfo

import click

from vigil.common.click_types import Duration, RowNumber, label_pairs
from vigil.notifier.api.bodies import window_body
from vigil.common.times import people_time as when, utc_text
from vigil.oncall.schedules import moment_at

from vigil.cli.options import by_option, call_notifier, json_option, notifier_options, printed_plainly


TIME_HELP = "now, UNIX seconds, or a time like 2026-11-24T22:00Z (without an offset: UTC)"
UTC = ZoneInfo("UTC")


@click.group()
def maintenance():
    """Maintenance windows: pages of matching alerts are held (recorded, not sent) and their escalation
    pauses while one lasts; an incident still open when it ends pages its tier then."""


@maintenance.command("list")
@notifier_options
@click.option("--all", "include_past", is_flag=True, help="Also the windows that are over.")
@json_option
def list_windows(run_dir, include_past, as_json):
    """List the maintenance windows active now or to come."""
    windows = call_notifier(run_dir, lambda c: c.maintenance(include_past), stopped_ok=True, what="maintenance windows")
    if printed_plainly("windows", windows, as_json):
        return
    for w in windows:
        matchers = " ".join(f"{k}={v}" for k, v in sorted(w["match"].items()))
        status = "ACTIVE" if w["active"] else ("ended" if w.get("ended_at") else "")
        name = f"#{w['id']}" if w.get("id") is not None else "(file)"
        click.echo(f"{name:<6} {when(w['starts_at'])} → {when(w.get('ended_at') or w['ends_at'])}  {status:<6} "
                   f"{matchers}  by {w.get('created_by') or 'the on-call file'}" + (f": {w['reason']}" if w.get("reason") else ""))


def _time(ctx, param, value: str | None) -> float | None:
    if value is None:
        return None
    try:
        return moment_at(value, UTC, datetime.now(timezone.utc).timestamp())
    except ValueError as exc:
        raise click.BadParameter(str(exc), ctx=ctx, param=param) from None


@maintenance.command()
@notifier_options
@click.option("--match", "matchers", multiple=True, required=True, callback=label_pairs, metavar="LABEL=VALUE",
              help="Alerts whose labels equal every --match (repeat it: --match node=node-7 --match gpu=3).")
@click.option("--for", "duration", type=Duration(positive=True), help="How long, from the start: 2h, 90m, 1d …")
@click.option("--until", "until", callback=_time, metavar="TIME", help=f"When it ends: {TIME_HELP}.")
@click.option("--from", "start", callback=_time, metavar="TIME", help=f"When it starts (default: now): {TIME_HELP}.")
@click.option("--reason", help="Why (shown on held pages' timeline events).")
@by_option
def add(run_dir, matchers, duration, until, start, reason, by):
    """Add a maintenance window: --match LABEL=VALUE … and --for DURATION or --until TIME."""
    if (duration is None) == (until is None):
        raise click.UsageError("give exactly one of --for DURATION and --until TIME")
    window = window_body(matchers, by, reason, start, until, duration)
    added = call_notifier(run_dir, lambda c: c.add_maintenance(window), refused="add a maintenance window")
    click.echo(f"maintenance window #{added['id']}: {when(added['starts_at'])} → {when(added['ends_at'])} UTC "
               f"({'active now' if added['active'] else 'not begun'})")


@maintenance.command()
@notifier_options
@click.argument("window_id", type=RowNumber("maintenance window"))
def end(run_dir, window_id):
    """End a maintenance window now (one not begun is cancelled): the escalations it paused resume."""
    ended = call_notifier(run_dir, lambda c: c.end_maintenance(window_id), refused=f"end maintenance window {window_id}")
    click.echo(f"maintenance window #{ended['id']} ended at {utc_text(ended['ended_at'])}")
