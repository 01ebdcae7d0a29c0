"""`vigil incidents list|show|ack|resolve|note|mark|escalate|reopen`: work the incidents of the running stack's
notifier (found through `--run-dir`, like `vigil inbox`), the same as its REST API does.

On a stopped stack `list` and `show` read the run directory's notifier database instead (read-only,
`vigil.stack.stopped`, the same JSON); the verbs that change an incident need the running notifier.
`--by` says who acts (default: $USER); it is shown on the incident's timeline.
"""

from __future__ import annotations

import json

import click

from vigil.common.click_types import RowNumber
from vigil.common.times import parse_time, people_time as when, utc_text
from vigil.notifier.incident_text import event_text as what, window_text
from vigil.notifier.postmortem.facts import escalation_texts
from vigil.notifier.postmortem.page_fate import page_results, unsent_fates

from vigil.cli.options import by_option, call_notifier, json_option, notifier_options, printed_plainly

STATES = ("triggered", "acknowledged", "resolved")
PRIORITIES = ("P1", "P2", "P3", "P4", "P5")


@click.group()
def incidents():
    """Incidents of the stack: list, show (with the timeline), acknowledge, resolve, note, mark noisy, escalate, reopen.

    list and show also work on a stopped stack (they read its run directory's notifier database)."""


@incidents.command("list")
@notifier_options
@click.option("--state", type=click.Choice(STATES), help="Only incidents in this state.")
@click.option("--priority", type=click.Choice(PRIORITIES), help="Only incidents of this priority.")
@click.option("--team", help="Only incidents of this team.")
@click.option("--limit", type=click.IntRange(1, 5000), default=500, show_default=True, help="The newest this many.")
@json_option
def list_incidents(run_dir, state, priority, team, limit, as_json):
    """List incidents, oldest first."""
    found = call_notifier(run_dir, lambda c: c.incidents(limit, state=state, priority=priority, team=team),
                          stopped_ok=True)
    if printed_plainly("incidents", found, as_json):
        return
    for incident in found:
        by = f" by {incident['acknowledged_by']}" if incident.get("state") == "acknowledged" else ""
        click.echo(f"#{incident['id']:<5} {incident.get('state', incident['status']) + by:<24} "
                   f"{incident.get('priority') or '-':<3} {incident.get('team') or '-':<12} "
                   f"{when(incident.get('opened_at'))}  {incident['title']}")


@incidents.command()
@notifier_options
@click.argument("incident_id", type=RowNumber("incident"))
@json_option
def show(run_dir, incident_id, as_json):
    """Show an incident: its state, SLA, alerts, pages and timeline (time, what happened, who)."""
    incident = call_notifier(run_dir, lambda c: c.incident(incident_id), stopped_ok=True)
    if as_json:
        click.echo(json.dumps(incident, indent=2))
        return
    for line in describe_incident(incident):
        click.echo(line)


def paused_text(paused: dict) -> str:
    """`paused: maintenance window 3 (firmware) until 2026-11-24 10:00:00 UTC` (the API's `escalation_paused`)."""
    return f"paused: {window_text(paused)}" + (f" until {utc_text(paused['until'])}" if paused.get("until") else "")


def describe_incident(incident: dict) -> list[str]:
    sla, paused = incident.get("sla") or {}, incident.get("escalation_paused")
    due = [f"{target} due {when(incident.get(f'{target}_due_at'))} ({sla.get(target)})"
           if not (paused and target == "ack" and sla.get(target) == "pending") else f"ack target {paused_text(paused)}"
           for target in ("ack", "resolve") if incident.get(f"{target}_due_at")]
    lines = [f"#{incident['id']} {incident['title']}",
             f"  state {incident.get('state')}, priority {incident.get('priority') or '-'}, team "
             f"{incident.get('team') or '-'}, policy {incident.get('policy') or '-'}",
             "  " + ", ".join([f"opened {when(incident.get('opened_at'))}", *due])]
    lines += ["alerts:"] + [f"  {a['status']:<8} " + " ".join(f"{k}={v}" for k, v in sorted(a["labels"].items()))
                            for a in incident.get("alerts", [])]
    lines.append("timeline:")
    events = incident.get("timeline", [])
    escalated = escalation_texts(events)  # the tier an escalation paged, as the postmortem names it
    pages = incident.get("pages") or []  # a queued page that never went out says why, as the postmortem does
    unsent = unsent_fates(pages, events, page_results(pages, events, incident.get("status") == "resolved", parse_time),
                          parse_time)
    kind_w = max([16, *(len(e["kind"]) for e in events)])  # columns as wide as their longest entry
    actor_w = max([14, *(len(e.get("actor") or "") for e in events)])
    for index, event in enumerate(events):
        text = "".join(escalated[index]) if event["kind"] == "escalated" else what(event)
        text += f"; {unsent[index]}" if index in unsent else ""
        lines.append(f"  {when(event['at'])}  {event['kind']:<{kind_w}} {event.get('actor') or '':<{actor_w}} {text}".rstrip())
    return lines


def _action(verb: str, action: str, done: str, help_text: str):
    @incidents.command(verb)
    @notifier_options
    @click.argument("incident_id", type=RowNumber("incident"))
    @by_option
    def command(run_dir, incident_id, by):
        incident = call_notifier(run_dir, lambda c: c.incident_action(incident_id, action, by),
                                 refused=f"{verb} incident {incident_id}")
        click.echo(f"#{incident['id']} {done} by {by}: now {incident.get('state')}")
    command.help = help_text
    return command


ack = _action("ack", "ack", "acknowledged",
              "Acknowledge an incident: paging stops (until the policy's re-page time, if it has one).")
resolve = _action("resolve", "resolve", "resolved", "Resolve an incident by hand; whoever was paged hears of it.")
escalate = _action("escalate", "escalate", "escalated to the next tier", "Page the next tier of the policy now.")
reopen = _action("reopen", "reopen", "reopened",
                 "Reopen a resolved incident: it fires again, unacknowledged, and the policy pages from its first tier.")


@incidents.command()
@notifier_options
@click.argument("incident_id", type=RowNumber("incident"))
@click.option("--noisy", "verdict", flag_value="noisy", default=True,
              help="It should not have paged (the default).")
@click.option("--not-actionable", "verdict", flag_value="not_actionable", help="There was nothing to do about it.")
@click.option("--actionable", "verdict", flag_value="actionable", help="Withdraw an earlier mark.")
@click.option("--reason", help="Why, on the incident's timeline.")
@by_option
def mark(run_dir, incident_id, verdict, reason, by):
    """Mark an incident's page noisy or not actionable: counted in its rule's noise score (`vigil report
    oncall`, `vigil rules backtest --notifier-url`); the newest mark counts."""
    body = {"verdict": verdict, **({"reason": reason} if reason else {})}
    call_notifier(run_dir, lambda c: c.incident_action(incident_id, "mark", by, **body),
                  refused=f"mark incident {incident_id}")
    click.echo(f"#{incident_id}: marked {verdict.replace('_', ' ')} by {by}")


@incidents.command()
@notifier_options
@click.argument("incident_id", type=RowNumber("incident"))
@click.argument("text")
@by_option
def note(run_dir, incident_id, text, by):
    """Add a note to an incident's timeline."""
    call_notifier(run_dir, lambda c: c.incident_action(incident_id, "notes", by, text=text),
                  refused=f"add a note to incident {incident_id}")
    click.echo(f"#{incident_id}: note added by {by}")
