"""`vigil oncall`: who is on call, the shifts, coverage checks and calendar export of the on-call file.

Every command but `check` reads the on-call file named by `--config`, else the one the stack running
in `--run-dir` uses (the notifier's `--oncall-config`), with each schedule's `overrides_ics` applied.
Times (`--at`, `--from`, `--to`) are `now`, a local time like 2026-11-28T03:00 in the team's (or
schedule's, or file's) zone, or a time with an offset like 2026-11-28T03:00+08:00 or …Z.
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import asdict
from pathlib import Path
from zoneinfo import ZoneInfo

import click

from vigil.cli.options import run_dir_option
from vigil.oncall.check import WEEK_S, check_file, format_time, tier_label
from vigil.oncall.coverage import team_schedules, team_zone, who
from vigil.oncall.ical import person_calendar, person_name, schedule_calendar
from vigil.oncall.loader import OncallConfigError, load_oncall
from vigil.oncall.schedule_model import zone_named
from vigil.oncall.schedules import UnknownSchedule, moment_at, schedule_of, schedule_zone, shifts

from vigil.stack.runstate import NoStack, read_state
from vigil.stack.config import RunLayout

TIME_HELP = "now, UNIX seconds, local time like 2026-11-28T03:00, or with an offset (…+08:00, …Z)"

config_option = click.option(
    "--config", "config_file", type=click.Path(path_type=Path, dir_okay=False), default=None,
    help="The on-call file. Default: the one the stack running in --run-dir uses.")


@click.group()
def oncall():
    """Who is on call, the shifts, coverage checks and iCal export of the on-call file."""


@oncall.command("who")
@click.option("--team", help="Only this team (default: every team; every policy when the file has no teams).")
@click.option("--at", "at_text", default="now", show_default=True, help=f"When: {TIME_HELP}; local times in the team's zone.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@config_option
@run_dir_option
def who_command(team, at_text, as_json, config_file, run_dir):
    """Who is on call for each tier of the team's escalation policy."""
    config, _ = _load(config_file, run_dir)
    if team is not None and team not in config.teams:
        raise click.ClickException(f"unknown team {team!r} (known: {', '.join(sorted(config.teams)) or 'none defined'})")
    now = time.time()
    names = [team] if team else list(config.teams) or [None]
    found = []
    for name in names:
        zone = team_zone(config, name)
        at = _moment(at_text, zone, now, "--at")
        found += [(cover, at, zone) for cover in who(config, at, name)]
    if as_json:
        click.echo(json.dumps({"teams": [_cover_json(cover, at) for cover, at, _ in found]}, indent=2))
        return
    if not found:
        click.echo("no teams and no policies in the on-call file: nobody is paged through a policy")
    for cover, at, zone in found:
        title = f"team {cover.team}" if cover.team else f"policy {cover.policy}"
        policy = f", policy {cover.policy}" if cover.team and cover.policy else ", no policy" if cover.team else ""
        click.echo(f"{title}{policy}, at {format_time(at, zone)}:")
        for tier in cover.tiers:
            people = ", ".join(_person(config, p) for p in tier.people) or "NOBODY on call"
            click.echo(f"  {tier_label(tier.name, tier.index)}: {people}")


@oncall.command("shifts")
@click.option("--team", help="The schedules of this team's policy (default: every schedule).")
@click.option("--from", "from_text", default="now", show_default=True, help=f"Start: {TIME_HELP}.")
@click.option("--to", "to_text", default=None, help="End (same forms; default: a week after the start).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@config_option
@run_dir_option
def shifts_command(team, from_text, to_text, as_json, config_file, run_dir):
    """List the final shifts (layers, restrictions and overrides applied) of the team's schedules."""
    config, _ = _load(config_file, run_dir)
    if team is not None and team not in config.teams:
        raise click.ClickException(f"unknown team {team!r} (known: {', '.join(sorted(config.teams)) or 'none defined'})")
    zone = team_zone(config, team)
    start = _moment(from_text, zone, time.time(), "--from")
    end = _moment(to_text, zone, start, "--to") if to_text else start + WEEK_S
    if end <= start:
        raise click.BadParameter("must be after --from", param_hint="--to")
    rows = [(name, shift) for name in team_schedules(config, team) for shift in shifts(config, name, start, end)]
    if as_json:
        click.echo(json.dumps({"shifts": [{"schedule": name, "person": s.person, "start": s.start, "end": s.end,
                                           "source": s.source} for name, s in rows]}, indent=2))
        return
    if not rows:
        click.echo("no shifts in that range")
        return
    table = [("SCHEDULE", "PERSON", "FROM", "TO", "SOURCE")] + [
        (name, _person(config, s.person), format_time(s.start, zone), format_time(s.end, zone), s.source) for name, s in rows]
    widths = [max(len(row[i]) for row in table) for i in range(4)]
    for row in table:
        click.echo("  ".join(cell.ljust(width) for cell, width in zip(row, widths)) + "  " + row[4])


@oncall.command("check")
@click.argument("file", type=click.Path(path_type=Path, dir_okay=False))
@click.option("--weeks", type=click.IntRange(min=1), default=4, show_default=True, help="How far ahead to look for coverage gaps.")
@click.option("--from", "from_text", default="now", show_default=True, help=f"Where the look-ahead starts: {TIME_HELP}.")
def check_command(file, weeks, from_text):
    """Report every mistake of FILE and every coverage gap (a time when a tier has nobody on call)
    over the next --weeks, each as FILE:LINE: message. Exits 1 if there is any."""
    try:
        checked = check_file(file, from_text, time.time(), weeks)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--from") from None
    for line in checked.problems + checked.gaps:
        click.echo(line)
    if not checked.ok:
        click.echo(checked.summary(weeks), err=True)
        sys.exit(1)
    click.echo(f"{file}: {checked.summary(weeks)}")


@oncall.command("export")
@click.argument("schedule", required=False)
@click.option("--person", help="Export this person's shifts across every schedule instead.")
@click.option("--from", "from_text", default="now", show_default=True, help=f"Start: {TIME_HELP}.")
@click.option("--to", "to_text", default=None, help="End (same forms; default: four weeks after the start).")
@click.option("-o", "--output", type=click.Path(path_type=Path, dir_okay=False, allow_dash=True), default="-",
              show_default=True, help="Write the .ics here (- : standard output).")
@config_option
@run_dir_option
def export_command(schedule, person, from_text, to_text, output, config_file, run_dir):
    """Export SCHEDULE's shifts (or --person's own) as an iCalendar (.ics) file."""
    if (schedule is None) == (person is None):
        raise click.UsageError("name a SCHEDULE or --person, one of them")
    config, _ = _load(config_file, run_dir)
    try:
        zone = schedule_zone(config, schedule_of(config, schedule)) if schedule else zone_named(config.timezone)
    except UnknownSchedule as exc:
        raise click.ClickException(str(exc)) from None
    if person is not None and person not in config.people:
        raise click.ClickException(f"unknown person {person!r} (known: {', '.join(sorted(config.people)) or 'none defined'})")
    now = time.time()
    start = _moment(from_text, zone, now, "--from")
    end = _moment(to_text, zone, start, "--to") if to_text else start + 4 * WEEK_S
    if end <= start:
        raise click.BadParameter("must be after --from", param_hint="--to")
    data = (schedule_calendar(config, schedule, start, end, stamp=now) if schedule
            else person_calendar(config, person, start, end, stamp=now))
    with click.open_file(str(output), "wb") as handle:
        handle.write(data)


# --- helpers ---------------------------------------------------------------------------------------


def _load(config_file: Path | None, run_dir: Path):
    path = config_file or _stack_oncall_file(run_dir)
    try:
        return load_oncall(path), path
    except OncallConfigError as exc:
        raise click.ClickException("the on-call file has mistakes:\n" + "\n".join(exc.problems)) from None


def _stack_oncall_file(run_dir: Path) -> Path:
    """The on-call file of the stack in `run_dir`: the notifier's `--oncall-config` argument."""
    try:
        state = read_state(run_dir)
    except NoStack as exc:
        raise click.ClickException(f"{exc}; or name the on-call file with --config FILE") from None
    notifier = state.components.get("notifier")
    try:
        args = Path(f"/proc/{notifier.pid}/cmdline").read_bytes().decode().split("\0")
        joined = [arg.split("=", 1)[1] for arg in args if arg.startswith("--oncall-config=")]
        named = Path(joined[0] if joined else args[args.index("--oncall-config") + 1])
        return named if named.is_absolute() else Path(f"/proc/{notifier.pid}/cwd").resolve() / named
    except (AttributeError, OSError, ValueError, IndexError):
        return RunLayout(run_dir.resolve()).oncall_config


def _moment(text: str, zone: ZoneInfo, now: float, option: str) -> float:
    try:
        return moment_at(text, zone, now)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint=option) from None


def _person(config, key: str) -> str:
    name = person_name(config, key)
    return key if name == key else f"{key} ({name})"


def _cover_json(cover, at: float) -> dict:
    return {**asdict(cover), "at": at}


@oncall.command("hash-password")
@click.option("--stdin", "from_stdin", is_flag=True,
              help="Read the password from the first line of standard input instead of asking twice.")
def hash_password_command(from_stdin):
    """Print an Argon2id hash of a web-console password: paste it as `password_hash:` of the person in the
    on-call file (`people.<key>`); the person then logs in to the console with their key and this password."""
    from vigil.notifier.console.passwords import hash_password

    if from_stdin:
        password = sys.stdin.readline().rstrip("\r\n")
    else:
        password = click.prompt("Password", hide_input=True, confirmation_prompt=True)
    if not password:
        raise click.UsageError("the password is empty")
    click.echo(hash_password(password))
