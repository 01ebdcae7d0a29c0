"""`vigil inbox`: the pages delivered to the stack's local inbox, optionally only some of them (the
notifier's `GET /api/v1/inbox` filters them: `to`, `incident`, `status`, `since`, `limit`). On a stopped
stack they are read from its notifier database (`vigil.stack.stopped`), as `vigil incidents list` does.
"""

from __future__ import annotations

import json
import time

import click

from vigil.common.click_types import Duration, RowNumber
from vigil.common.times import people_time as when, rfc3339

from vigil.cli.options import call_notifier, notifier_options


DEFAULT_PAGES = 500  # what `vigil inbox` lists without --limit (the notifier's default page of rows)
MAX_PAGES = 5000  # the most the notifier lists at once


@click.command()
@notifier_options
@click.option("--to", "to", metavar="PERSON", multiple=True,
              help="Only pages sent to this person (the on-call file's key, as listed after `to`); repeat for several.")
@click.option("--incident", "incidents", metavar="ID", type=RowNumber("incident"), multiple=True,
              help="Only pages about this incident; repeat for several.")
@click.option("--status", type=click.Choice(["firing", "resolved"]), help="Only firing or only resolved pages.")
@click.option("--since", type=Duration(positive=True), metavar="DURATION",
              help="Only pages that arrived within this long before now: 30m, 2h, 1d, 90 (seconds) …")
@click.option("--limit", type=click.IntRange(1, MAX_PAGES), metavar="N", default=DEFAULT_PAGES, show_default=True,
              help="Only the newest N pages (of those the other filters keep).")
@click.option("--json", "as_json", is_flag=True, help="Print the pages as JSON: {\"pages\": [...]}, oldest first.")
def inbox(run_dir, to, incidents, status, since, limit, as_json):
    """List the pages delivered to the demo's local inbox, oldest first; --to, --incident, --status and
    --since keep only some (all of them must hold), --limit the newest N."""
    filtered = bool(to or incidents or status or since)
    newer_than = rfc3339(time.time() - since) if since else None
    pages = call_notifier(run_dir, lambda c: c.pages(limit=limit, to=list(to), incident=list(incidents), status=status,
                                                     since=newer_than), stopped_ok=True, what="pages")
    if as_json:
        click.echo(json.dumps({"pages": pages}, indent=2))
        return
    if not pages:
        click.echo("no page in the inbox matches these filters" if filtered else "the inbox is empty")
        return
    for page in pages:
        tier = f" (tier {page['tier'] + 1})" if isinstance(page.get("tier"), int) else ""
        click.echo(f"{when(page.get('time'))}  #{page.get('incident_id')}  {page.get('status', '').upper():<8}  "
                   f"to {page.get('recipient')} via {page.get('channel')}{tier}")
        click.echo(f"    {page.get('title')}")
        for line in str(page.get("body") or "").splitlines()[:6]:
            click.echo(f"    {line}")
