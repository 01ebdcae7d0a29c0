"""`vigil inbox`: the pages delivered to the stack's local inbox, optionally only some of them.

The notifier's `GET /api/v1/inbox` takes only `?limit=N` (the newest N), so `--limit` alone is asked of
the notifier and the other filters are applied here, to the newest `FILTER_WINDOW` pages it returns.
"""

from __future__ import annotations

import json
import time
from datetime import datetime, timezone

import click
import requests

from vigil.common.click_types import Duration

from .cli_stack import run_dir_option
from .runstate import NoStack
from .stack_client import StackClient

DEFAULT_PAGES = 500  # what `vigil inbox` without filters lists (the notifier's default page of rows)
FILTER_WINDOW = 5000  # with a filter: the newest pages it looks through (the most the notifier lists)


def select_pages(pages: list[dict], *, to: tuple[str, ...] = (), incidents: tuple[int, ...] = (),
                 status: str | None = None, newer_than: float | None = None, limit: int | None = None) -> list[dict]:
    """The pages (oldest first) sent to one of `to`, about one of `incidents`, of `status`, that arrived at
    or after `newer_than` (UNIX seconds): each filter given must hold; then the newest `limit` of them."""
    chosen = [page for page in pages
              if (not to or page.get("recipient") in to)
              and (not incidents or page.get("incident_id") in incidents)
              and (status is None or page.get("status") == status)
              and (newer_than is None or _seconds(page.get("time")) >= newer_than)]
    return chosen[-limit:] if limit else chosen


def _seconds(value) -> float:
    """UNIX seconds of a page's `time` (RFC 3339 from the API); a time that cannot be read is oldest."""
    if isinstance(value, (int, float)):
        return float(value)
    try:
        return datetime.fromisoformat(str(value).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return float("-inf")


@click.command()
@run_dir_option
@click.option("--to", "to", metavar="PERSON", multiple=True,
              help="Only pages sent to this person (the on-call file's key, as listed after `to`); repeat for several.")
@click.option("--incident", "incidents", metavar="ID", type=click.IntRange(min=1), multiple=True,
              help="Only pages about this incident; repeat for several.")
@click.option("--status", type=click.Choice(["firing", "resolved"]), help="Only firing or only resolved pages.")
@click.option("--since", type=Duration(positive=True), metavar="DURATION",
              help="Only pages that arrived within this long before now: 30m, 2h, 1d, 90 (seconds) …")
@click.option("--limit", type=click.IntRange(1, FILTER_WINDOW), metavar="N",
              help=f"Only the newest N pages (after the other filters).  [default: all of the newest {DEFAULT_PAGES}; "
                   f"with a filter, of the newest {FILTER_WINDOW}]")
@click.option("--json", "as_json", is_flag=True, help="Print the pages as JSON: {\"pages\": [...]}, oldest first.")
def inbox(run_dir, to, incidents, status, since, limit, as_json):
    """List the pages delivered to the demo's local inbox, oldest first; --to, --incident, --status and
    --since keep only some (all of them must hold), --limit the newest N."""
    filtered = bool(to or incidents or status or since)
    fetch = FILTER_WINDOW if filtered else (limit or DEFAULT_PAGES)
    try:
        pages = StackClient.from_run_dir(run_dir).pages(limit=fetch)
    except NoStack as exc:
        raise click.ClickException(str(exc)) from None
    except requests.RequestException as exc:
        raise click.ClickException(f"cannot reach the notifier: {exc}") from None
    pages = select_pages(pages, to=to, incidents=incidents, status=status,
                         newer_than=time.time() - since if since else None, limit=limit)
    if as_json:
        click.echo(json.dumps({"pages": pages}, indent=2))
        return
    if not pages:
        click.echo("no page in the inbox matches these filters" if filtered else "the inbox is empty")
        return
    for page in pages:
        when = _format_time(page.get("time"))
        tier = f" (tier {page['tier'] + 1})" if isinstance(page.get("tier"), int) else ""
        click.echo(f"{when}  #{page.get('incident_id')}  {page.get('status', '').upper():<8}  "
                   f"to {page.get('recipient')} via {page.get('channel')}{tier}")
        click.echo(f"    {page.get('title')}")
        for line in str(page.get("body") or "").splitlines()[:6]:
            click.echo(f"    {line}")


def _format_time(value) -> str:
    if isinstance(value, (int, float)):
        return datetime.fromtimestamp(value, tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%S")
    return str(value)
