"""What a page says: a title line and a body listing the group's alerts, then what to do about them
(the repair action the XID catalogue attaches, the alert's description, the affected job and its owner,
the runbook); escalation pages add who handled the incident and the one-click links (acknowledge /
resolve / open)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timezone

from vigil.notifier.core.models import MAX_TITLE_CHARS, WebhookPayload, shorten
from vigil.rules.xid_catalog import ACTION_TEXT

MAX_LISTED_ALERTS = 10  # keep SMS and voice pages short; the rest are counted
MAX_LINE_CHARS = 300  # one alert's line, its summary included


@dataclass(frozen=True)
class PageText:
    title: str
    body: str


def compose_page(payload: WebhookPayload, page_status: str, incident_id: int, priority: str | None = None) -> PageText:
    firing = [alert for alert in payload.alerts if alert.status == "firing"]
    head = f"[{page_status.upper()}" + (f":{len(firing)}]" if page_status == "firing" else "]")
    title = shorten(f"{head} {payload.title()}", MAX_TITLE_CHARS)
    lines = [_first_line(incident_id, priority)]
    for alert in payload.alerts[:MAX_LISTED_ALERTS]:
        where = " ".join(f"{key}={alert.labels[key]}" for key in ("node", "gpu", "uuid") if key in alert.labels)
        summary = alert.annotations.get("summary") or alert.annotations.get("description", "")
        since = alert.starts_at.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        text = f"- {alert.status} {alert.labels.get('alertname', '?')} {where}".rstrip()
        lines.append(shorten(f"{text}{': ' + summary if summary else ''}", MAX_LINE_CHARS) + f" (since {since})")
    hidden = len(payload.alerts) - MAX_LISTED_ALERTS + payload.truncatedAlerts
    if hidden > 0:
        lines.append(f"… and {hidden} more")
    if page_status == "firing" and firing:
        lines += what_to_do(firing[0].labels, firing[0].annotations)
    return PageText(title, "\n".join(lines))


def _first_line(incident_id: int, priority: str | None) -> str:
    """`incident #7 · P1` (the group key is in the incidents API, not in pages)."""
    return f"incident #{incident_id}" + (f" · {priority}" if priority else "")


def what_to_do(labels: dict, annotations: dict) -> list[str]:
    """What the person paged should do about an alert, as far as vigil knows: the repair action (the XID
    catalogue's, carried in the `action` label), the alert's description, the training job it stops and
    its owner, and the runbook."""
    lines = []
    if labels.get("action") in ACTION_TEXT:
        lines.append(f"action: {ACTION_TEXT[labels['action']]}")
    if annotations.get("description"):
        lines.append(shorten(f"about: {annotations['description']}", MAX_LINE_CHARS))
    if labels.get("job_id"):
        owner = labels.get("user") or labels.get("tenant")
        lines.append(f"job: {labels['job_id']}" + (f" (owner {owner})" if owner else ""))
    if annotations.get("runbook_url"):
        lines.append(shorten(f"runbook: {annotations['runbook_url']}", MAX_LINE_CHARS))
    return lines


LINK_LABELS = ("acknowledge", "resolve", "open")  # the order of `vigil.notifier.links.page_links`


def compose_incident_page(payload: WebhookPayload | None, page_status: str, incident_id: int, fallback_title: str,
                          links: list[str] = (), note: str | None = None, priority: str | None = None) -> PageText:
    """The page of incident `incident_id` from its latest notification `payload` (None: the incident's
    own `fallback_title` only), with its `priority`, an optional `note` line (who resolved it…) and the
    signed links."""
    if payload is None:
        text = PageText(shorten(f"[{page_status.upper()}] {fallback_title}", MAX_TITLE_CHARS),
                        _first_line(incident_id, priority))
    else:
        text = compose_page(payload, page_status, incident_id, priority)
    lines = [text.body]
    if note:
        lines.append(note)
    lines += [f"{label}: {url}" for label, url in zip(LINK_LABELS, links)]
    return PageText(text.title, "\n".join(lines))
