"""`vigil report oncall --from --to [--team T] [--json]`: on-call health of the stack's
notifier (MTTA, MTTR, pages per person and outside working hours, SLA compliance, escalation rate,
noisiest alerts, acknowledged and acted-on share). The notifier computes it
(`GET /api/v1/reports/oncall`); `--json` prints its answer unchanged (the shape is in
`docs/oncall-health.md`). On a stopped stack the same report is computed from the run directory's notifier
database (read-only, `vigil.stack.stopped`), as `vigil incidents` and `vigil postmortem` read it.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from zoneinfo import ZoneInfo

import click

from vigil.common.durations import format_duration
from vigil.oncall.schedules import moment_at
from vigil.common.times import people_time as when

from vigil.cli.options import call_notifier, json_option, notifier_options


TIME_HELP = "now, UNIX seconds, or a time like 2026-11-24T22:00Z (without an offset: the on-call file's zone)"
# the summary table's columns, each named on two lines (a 10-character column each)
COLUMNS = (("", "incidents"), ("", "paged"), ("acked by", "a person"), ("", "MTTA"), ("", "MTTR"), ("", "escal."),
           ("SLA ack", "met"), ("resolved", "unacked"), ("SLA res.", "met"), ("", "pages"), ("", "off-hours"),
           ("", "acted on"))
# what the columns that read alike are (docs/oncall-health.md has every definition)
LEGEND = ("acked by a person: share of the paged incidents a person acknowledged. SLA ack met: share of the",
          "incidents with an ack target that met it: acknowledged in time, or resolved (by Alertmanager or a",
          "person) before the deadline without an ack. resolved unacked: incidents resolved before anyone acked.")


def _checked_time(ctx, param, value: str | None) -> str | None:
    """The text as typed (the notifier reads it in the on-call file's zone), refused here when unreadable."""
    if value is not None:
        try:
            moment_at(value, ZoneInfo("UTC"), datetime.now(timezone.utc).timestamp())
        except ValueError as exc:
            raise click.BadParameter(str(exc), ctx=ctx, param=param) from None
    return value


@click.group()
def report():
    """Reports on what the notifier recorded."""


@report.command()
@notifier_options
@click.option("--from", "start", callback=_checked_time, metavar="TIME",
              help=f"Start (default: 7 days before --to): {TIME_HELP}.")
@click.option("--to", "end", callback=_checked_time, metavar="TIME", help="End, excluded (default: now); same forms.")
@click.option("--team", help="Only this team's incidents.")
@json_option
def oncall(run_dir, start, end, team, as_json):
    """On-call health of the incidents opened from --from to --to: per team, priority and person (a stopped
    stack's too, read from its run directory)."""
    found = call_notifier(run_dir, lambda c: c.oncall_report(start, end, team), stopped_ok=True)
    if as_json:
        click.echo(json.dumps(found, indent=2))
        return
    for line in describe(found):
        click.echo(line)


def _seconds(value: float | None) -> str:
    return "-" if value is None else format_duration(round(value))


def _share(value: float | None) -> str:
    return "-" if value is None else f"{value:.0%}"


def _row(name: str, s: dict) -> str:
    cells = (s["incidents"], s["paged_incidents"], _share(s["acknowledged_share"]), _seconds(s["mtta_seconds"]),
             _seconds(s["mttr_seconds"]), _share(s["escalation_rate"]), _share(s["sla"]["ack"]["compliance"]),
             s.get("resolved_before_ack", "-"), _share(s["sla"]["resolve"]["compliance"]), s["pages"],
             s["pages_outside_hours"], _share(s["acted_on_share"]))
    return f"{name:<16}" + "".join(f"{cell!s:>10}" for cell in cells)


def describe(found: dict) -> list[str]:
    """The report as text tables: all, per team, per priority, then people and every rule's noise."""
    lines = [f"On-call health, incidents opened {when(found['from'])} to {when(found['to'])} UTC"
             + (f", team {found['team']}" if found.get("team") else ""), ""]
    lines += [(f"{'':<16}" + "".join(f"{column[line]:>10}" for column in COLUMNS)).rstrip() for line in (0, 1)]
    lines.append(_row("all", found["overall"]))
    lines += [_row(f"team {t['team']}", t) for t in found["teams"]]
    lines += [_row(f"priority {p['priority']}", p) for p in found["priorities"]]
    lines += ["", *LEGEND]
    lines += ["", f"{'person':<16}{'pages':>8}{'off-hours':>10}{'acks':>6}{'MTTA':>10}{'notes':>7}{'resolved':>10}"
                  f"{'escalated':>10}  channels"]
    for p in found["people"]:
        channels = ", ".join(f"{kind} {count}" for kind, count in p["pages_by_channel"].items())
        lines.append(f"{p['person']:<16}{p['pages']:>8}{p['pages_outside_hours']:>10}{p['acknowledged']:>6}"
                     f"{_seconds(p['mtta_seconds']):>10}{p['notes']:>7}{p['resolved']:>10}{p['escalated']:>10}  "
                     f"{channels}")
    rules = found.get("rules", found["noisiest_alerts"])
    width = max([32, *(len(a["alertname"]) + 2 for a in rules)])  # the longest name fits
    lines += ["", f"{'rules, noisiest first':<{width}}{'incidents':>10}{'pages':>8}{'acked':>8}{'acted on':>10}"
                  f"{'noisy':>7}{'auto-res':>10}{'noise':>7}"]
    lines += [f"{a['alertname']:<{width}}{a['incidents']:>10}{a['pages']:>8}{_share(a['acknowledged_share']):>8}"
              f"{_share(a['acted_on_share']):>10}{a.get('marked_noisy', 0):>7}{a.get('auto_resolved_before_ack', 0):>10}"
              f"{_share(a.get('noise_score')):>7}" for a in rules]
    return lines
