"""`vigil rules backtest`: how often would these rules have fired over a past range, and how noisily?

Evaluates the given spec files (not what Prometheus has loaded) against a Prometheus's history and,
when the notifier's incident history is at hand, says which firings overlapped a known incident.
Format and semantics: docs/rules-backtest.md.
"""

from __future__ import annotations

import json
import time
from zoneinfo import ZoneInfo
from pathlib import Path

import click
import requests

from vigil.common.click_types import Duration, HttpUrl
from vigil.common.durations import format_duration, parse_duration
from vigil.common.prometheus_api import PrometheusClient, PrometheusUnavailable
from vigil.common.times import people_time, rfc3339
from vigil.oncall.schedules import LATEST, moment_at
from vigil.rules.backtest_run import (
    DEFAULT_FLAP_WINDOW, MAX_POINTS, Backtest, Settings, as_json, backtest, incidents_from_api,
    server_evaluation_interval,
)

from vigil.cli.options import load_ruleset, run_dir_option, specs_argument
from vigil.stack.runstate import NoStack
from vigil.stack.client import StackClient, StackRequestError

TIME_FORMS = "now, a duration back from now like -1d or now-6h, UNIX seconds, or RFC 3339 like 2026-11-22T00:00:00Z"
UTC = ZoneInfo("UTC")
INCIDENT_LIMIT = 5000  # the notifier's API returns at most the newest 5,000 incidents


def parse_moment(text: str, now: float) -> float:
    """UNIX seconds from `now`, `-1d`, `now-6h`, UNIX seconds or an RFC 3339 time (UTC when it has no offset);
    the absolute forms are the on-call CLIs' (`moment_at`), years 1970 to 2199 for all."""
    value = str(text).strip()
    lowered = value.lower()
    try:
        if lowered.startswith(("-", "now-")):
            found = now - parse_duration(lowered.split("-", 1)[1])
            if 0 <= found < LATEST:
                return found
        else:
            return moment_at(value, UTC, now)
    except ValueError:
        pass
    raise ValueError(f"{value!r} is not a time ({TIME_FORMS}; years 1970 to 2199)")


class Moment(click.ParamType):
    """A point in time as UNIX seconds, from any of TIME_FORMS."""

    name = "time"

    def convert(self, value, param, ctx) -> float:
        if isinstance(value, float):
            return value
        try:
            return parse_moment(value, time.time())
        except ValueError as exc:
            self.fail(str(exc), param, ctx)


def _stack(run_dir: Path) -> StackClient:
    try:
        return StackClient.from_run_dir(run_dir)
    except NoStack as exc:
        raise click.ClickException(f"give --prometheus URL, or start a stack: {exc}") from None


def _incident_rows(notifier: StackClient) -> list[dict]:
    try:
        return notifier.incidents(INCIDENT_LIMIT)
    except (StackRequestError, requests.RequestException) as exc:
        raise click.ClickException(f"cannot read the incidents of the notifier at {notifier.notifier}: {exc} "
                                   "(--no-incidents skips them)") from None


def _notifier(notifier_url: str | None, token_file: Path | None, stack: StackClient | None) -> StackClient | None:
    """The notifier whose incidents to compare with: --notifier, else the stack's when Prometheus is the stack's."""
    if (notifier_url is None) != (token_file is None):
        raise click.UsageError("--notifier and --token-file go together (the incidents API needs the bearer token)")
    if notifier_url is None:
        return stack
    try:
        token = token_file.read_text(encoding="utf-8").strip()
    except OSError as exc:
        raise click.ClickException(f"cannot read the token file {token_file}: {exc.strerror}") from None
    return StackClient(prometheus="", notifier=notifier_url.rstrip("/"), gpu_control=None, token=token)


@click.command(name="backtest")
@specs_argument
@click.option("--from", "start", type=Moment(), default="-1d", show_default=True, help=f"Start: {TIME_FORMS}.")
@click.option("--to", "end", type=Moment(), default="now", show_default=True, help="End, in the same forms.")
@click.option("--prometheus", "--prometheus-url", "prometheus", type=HttpUrl(), metavar="URL", help="Prometheus with the history. Default: the stack in --run-dir.")
@run_dir_option
@click.option("--interval", type=Duration(positive=True),
              help="Evaluation interval of groups that set none. Default: the server's global evaluation_interval.")
@click.option("--flap-window", type=Duration(), default=format_duration(DEFAULT_FLAP_WINDOW), show_default=True,
              help="A firing that starts this soon after the same series resolved is a flap.")
@click.option("--max-for", type=Duration(),
              help="Cap every 'for' and 'keep_firing_for', as `vigil rules generate --max-for` (the demo stack) does.")
@click.option("--notifier", "--notifier-url", "notifier_url", metavar="URL",
              help="Notifier whose incidents to compare with. Default: the stack's, when --prometheus is not given.")
@click.option("--token-file", type=click.Path(path_type=Path, dir_okay=False),
              help="File holding the notifier's bearer token (needed with --notifier).")
@click.option("--no-incidents", is_flag=True, help="Do not read the notifier's incidents.")
@click.option("--json", "as_json_output", is_flag=True, help="Print JSON (docs/rules-backtest.md).")
def backtest_command(specs, start, end, prometheus, run_dir, interval, flap_window, max_for, notifier_url, token_file,
                     no_incidents, as_json_output):
    """Evaluate the alerts of SPECS (default: the shipped specs) over past history, noisiest first.

    Per alert: how often it would have fired (its 'for' applied at each evaluation step), for how
    long, how often it flapped, and the share of firings that overlapped a known incident of the
    notifier. A changed spec file is backtested as it is, before it is deployed.
    """
    if end <= start:
        raise click.UsageError(f"--to must be after --from (got {people_time(rfc3339(start))} → {people_time(rfc3339(end))})")
    ruleset = load_ruleset(specs)
    stack = _stack(run_dir) if prometheus is None else None
    url = (prometheus or stack.prometheus).rstrip("/")
    notifier = None if no_incidents else _notifier(notifier_url, token_file, stack)
    try:
        client = PrometheusClient(url, timeout=60)
        settings = Settings(interval or server_evaluation_interval(client), flap_window, max_for)
        incidents = None if notifier is None else incidents_from_api(_incident_rows(notifier), start, end)
        result = backtest(client, ruleset, start, end, settings, incidents)
    except PrometheusUnavailable as exc:
        raise click.ClickException(str(exc)) from None
    # the noise of the incidents compared: those opened in the range, and those opened before it still open in it
    since = min([start, *(incident.start for incident in incidents or [])])
    noise = None if notifier is None else _noise(notifier, since, end)
    if as_json_output:
        found = as_json(result, url)
        for rule in found["rules"]:
            rule["noise"] = None if noise is None else noise.get(rule["alert"])
        click.echo(json.dumps(found, indent=2))
    else:
        _print_table(result, url, noise)
    if result.errors:
        raise click.ClickException(f"Prometheus refused {len(result.errors)} rule(s):\n" + "\n".join(result.errors))


NOISE_KEYS = ("paged_incidents", "pages", "acknowledged", "marked_noisy", "auto_resolved_before_ack", "noise_score")


def _noise(notifier: StackClient, start: float, end: float) -> dict[str, dict]:
    """Each rule's noise score over the incidents opened from `start` to `end` (`vigil report oncall`'s `rules`)."""
    try:
        found = notifier.oncall_report(rfc3339(start), rfc3339(end))
    except (requests.RequestException, StackRequestError) as exc:
        raise click.ClickException(f"cannot read the noise scores of the notifier at {notifier.notifier}: {exc}") from None
    return {row["alertname"]: {key: row.get(key) for key in NOISE_KEYS} for row in found.get("rules", [])}


def _noise_cell(noise: dict[str, dict] | None, alert: str) -> str:
    """`2/5 (40%)`: paged incidents marked noisy or auto-resolved before an ack, of those paged; `-` unknown."""
    row = (noise or {}).get(alert)
    if row is None or not row["paged_incidents"]:
        return "-"
    noisy = round(row["noise_score"] * row["paged_incidents"])
    return f"{noisy}/{row['paged_incidents']} ({row['noise_score']:.0%})"


def _print_table(result: Backtest, url: str, noise: dict[str, dict] | None = None) -> None:
    click.echo(f"backtest of {len(result.reports)} alerts over {people_time(rfc3339(result.start))} → {people_time(rfc3339(result.end))} UTC "
               f"({format_duration(result.end - result.start)}) against {url}; noisiest first")
    header = ("ALERT", "SEVERITY", "FIRINGS", "FIRING TIME", "FLAPS", "SERIES", "INCIDENTS", "NOISE")
    rows = [header]
    for r in result.reports:
        share = r.incident_share
        matched = "-" if share is None else f"{r.matched_incidents}/{len(r.firings)} ({share:.0%})"
        rows.append((r.alert, r.severity, str(len(r.firings)), format_duration(round(r.firing_seconds)), str(r.flaps),
                     str(len({f.labels for f in r.firings})), matched, _noise_cell(noise, r.alert)))
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    for row in rows:
        click.echo("  ".join(cell.ljust(w) if i < 2 else cell.rjust(w) for i, (cell, w) in enumerate(zip(row, widths))).rstrip())
    if result.incidents is None:
        click.echo("incidents: not compared (no notifier history: give --notifier URL --token-file FILE)")
    else:
        click.echo(f"incidents: {result.incidents} known incident(s) in the range compared")
    for r in result.reports:
        if r.from_history:
            click.echo(f"note: {r.alert} reads {', '.join(r.from_history)} as recorded by the server (with label "
                       "matchers, a range or an offset the recording rule cannot be inlined)")
    coarsened = sorted({(r.coarsened_from, r.step) for r in result.reports if r.coarsened_from is not None})
    for interval, step in coarsened:
        names = [r.alert for r in result.reports if (r.coarsened_from, r.step) == (interval, step)]
        click.echo(f"note: evaluated every {format_duration(step)} instead of every {format_duration(interval)}, as the "
                   f"range needs more than {MAX_POINTS:,} points per series at that interval: {', '.join(names)}")
