"""What a page says: a title line and a short body listing the group's alerts; escalation pages add
who handled the incident and the one-click links (acknowledge / resolve / open)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timezone

from vigil.notifier.models import MAX_TITLE_CHARS, WebhookPayload, shorten

MAX_LISTED_ALERTS = 10  # keep SMS and voice pages short; the rest are counted
MAX_LINE_CHARS = 300  # one alert's line, its summary included


@dataclass(frozen=True)
class PageText:
    title: str
    body: str


def compose_page(payload: WebhookPayload, page_status: str, incident_id: int) -> PageText:
    firing = [alert for alert in payload.alerts if alert.status == "firing"]
    head = f"[{page_status.upper()}" + (f":{len(firing)}]" if page_status == "firing" else "]")
    title = shorten(f"{head} {payload.title()}", MAX_TITLE_CHARS)
    lines = [f"incident #{incident_id}"]  # the group key is in the incidents API, not in pages
    for alert in payload.alerts[:MAX_LISTED_ALERTS]:
        where = " ".join(f"{key}={alert.labels[key]}" for key in ("node", "gpu") if key in alert.labels)
        summary = alert.annotations.get("summary") or alert.annotations.get("description", "")
        since = alert.starts_at.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        text = f"- {alert.status} {alert.labels.get('alertname', '?')} {where}".rstrip()
        lines.append(shorten(f"{text}{': ' + summary if summary else ''}", MAX_LINE_CHARS) + f" (since {since})")
    hidden = len(payload.alerts) - MAX_LISTED_ALERTS + payload.truncatedAlerts
    if hidden > 0:
        lines.append(f"… and {hidden} more")
    return PageText(title, "\n".join(lines))


LINK_LABELS = ("acknowledge", "resolve", "open")  # the order of `vigil.notifier.links.page_links`


def compose_incident_page(payload: WebhookPayload | None, page_status: str, incident_id: int, fallback_title: str,
                          links: list[str] = (), note: str | None = None) -> PageText:
    """The page of incident `incident_id` from its latest notification `payload` (None: the incident's
    own `fallback_title` only), with an optional `note` line (who resolved it…) and the signed links."""
    if payload is None:
        text = PageText(shorten(f"[{page_status.upper()}] {fallback_title}", MAX_TITLE_CHARS), f"incident #{incident_id}")
    else:
        text = compose_page(payload, page_status, incident_id)
    lines = [text.body]
    if note:
        lines.append(note)
    lines += [f"{label}: {url}" for label, url in zip(LINK_LABELS, links)]
    return PageText(text.title, "\n".join(lines))
