"""What a page says, in two forms.

The full form (IM, e-mail, the inbox): a title line and a body — the incident and its priority, why it
reached this person when it was escalated ("not acknowledged within 20s by ana (DRI)"), the group's
alerts, then what to do about them (the repair action the XID catalogue attaches, the alert's
description, the affected job and its owner, the runbook), a note (who resolved it), and the one-click
links (acknowledge / resolve / open / mark noisy).

The short form (SMS and phone, `SHORT_KINDS`): one line of at most 160 characters with the compact
acknowledge link — priority, incident, what broke and where, the repair action, why it was escalated:
`P1 #12 GpuXidHardware node-3 gpu 2: drain the node and reboot it. Ack http://…/l/AQBxP7MAM9zjKI7frKhNtXvn`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from urllib.parse import urlencode

from vigil.common import job_annotation
from vigil.notifier.core.models import MAX_TITLE_CHARS, WebhookPayload, shorten
from vigil.rules.xid_catalog import ACTION_TEXT, INSPECT_HARDWARE

MAX_LISTED_ALERTS = 10  # keep SMS and voice pages short; the rest are counted
MAX_LINE_CHARS = 300  # one alert's line, its summary included
SHORT_KINDS = frozenset({"sms", "phone"})  # contact kinds that get the short form
MAX_SHORT_CHARS = 160  # one SMS
# the shipped Grafana dashboards a page links to (`vigil.dashboards`: gpu.UID, NODE_UID, JOB_UID)
GPU_DASHBOARD, NODE_DASHBOARD, JOB_DASHBOARD = "vigil-gpu", "vigil-node", "vigil-job"
DASHBOARD_SPAN_S = 3600  # the dashboard opens on the hour before and the hour after the alert began


@dataclass(frozen=True)
class PageContext:
    """What the notifier knows beside the incident's own alerts: the same fault earlier on the GPU
    (`recurred`, `engine/recurrence.py`), and the symptoms that joined the incident (`also_firing`: each
    one's incident id and labels, `engine/causes.py`)."""

    recurred: str | None = None
    also_firing: tuple[tuple[int, dict], ...] = ()

    def job_labels(self, labels: dict) -> dict:
        """`labels`, with the training job of a joined symptom when they name none (a GPU lost says which
        job it stops through its job's XID alert)."""
        if labels.get("job_id"):
            return labels
        job = next((theirs for _, theirs in self.also_firing if theirs.get("job_id")), None)
        return labels if job is None else {**labels, **{k: job[k] for k in JOB_KEYS if job.get(k)}}


JOB_KEYS = ("job_id", "user", "tenant")
NO_CONTEXT = PageContext()


@dataclass(frozen=True)
class PageText:
    title: str
    body: str
    short: str = ""  # the SMS and phone form (empty: use the title)

    def for_kind(self, kind: str) -> tuple[str, str]:
        """(title, body) of the page sent to a contact of `kind`: the short form, alone, to SMS and phone."""
        if kind in SHORT_KINDS and self.short:
            return "", self.short
        return self.title, self.body


def compose_page(payload: WebhookPayload, page_status: str, incident_id: int, priority: str | None = None,
                 grafana_url: str | None = None, context: PageContext = NO_CONTEXT) -> PageText:
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
    if context.also_firing:
        joined = "; ".join(f"{theirs.get('alertname', '?')} " + " ".join(
            f"{key}={theirs[key]}" for key in ("node", "gpu", "job_id") if key in theirs) + f" (#{other})"
            for other, theirs in context.also_firing[:MAX_LISTED_ALERTS])
        lines.append(shorten(f"also firing, same cause (not paged): {joined}", MAX_LINE_CHARS))
    if page_status == "firing" and firing:
        lines += what_to_do(context.job_labels(firing[0].labels), firing[0].annotations, context.recurred)
        board = dashboard_link(grafana_url, firing[0].labels, firing[0].starts_at) if grafana_url else None
        if board:
            lines.append(f"dashboard: {board}")
    return PageText(title, "\n".join(lines))


def dashboard_link(grafana_url: str, labels: dict, began: datetime) -> str | None:
    """The Grafana dashboard of what broke — the GPU's, else the job's, else the node's — open on the
    two hours around the moment the alert began; None for an alert about none of them."""
    if labels.get("node") and labels.get("gpu"):
        board, variables = GPU_DASHBOARD, {"var-node": labels["node"], "var-gpu": labels["gpu"]}
    elif labels.get("job_id"):
        board, variables = JOB_DASHBOARD, {"var-job_id": labels["job_id"]}
    elif labels.get("node"):
        board, variables = NODE_DASHBOARD, {"var-node": labels["node"]}
    else:
        return None
    at_ms = int(began.timestamp() * 1000)
    span = {"from": at_ms - DASHBOARD_SPAN_S * 1000, "to": at_ms + DASHBOARD_SPAN_S * 1000}
    return f"{grafana_url.rstrip('/')}/d/{board}?{urlencode({**variables, **span})}"


def _first_line(incident_id: int, priority: str | None) -> str:
    """`incident #7 · P1` (the group key is in the incidents API, not in pages)."""
    return f"incident #{incident_id}" + (f" · {priority}" if priority else "")


def action_of(labels: dict, recurred: str | None = None) -> str | None:
    """The repair action's key: the `action` label (the XID catalogue's), or a hardware inspection when
    the same fault came back on the GPU (`recurred`, from `vigil.notifier.engine.recurrence`)."""
    if recurred:
        return INSPECT_HARDWARE
    return labels.get("action") if labels.get("action") in ACTION_TEXT else None


def what_to_do(labels: dict, annotations: dict, recurred: str | None = None) -> list[str]:
    """What the person paged should do about an alert, as far as vigil knows: the repair action (the XID
    catalogue's, carried in the `action` label; a hardware inspection when the fault came back: `recurred`
    says when), the alert's description, the training job it stops and its owner, and the runbook."""
    lines = []
    action = action_of(labels, recurred)
    if action is not None:
        lines.append(f"action: {ACTION_TEXT[action]}" + (f" — {recurred}" if recurred else ""))
    if annotations.get("description"):
        lines.append(shorten(f"about: {annotations['description']}", MAX_LINE_CHARS))
    if labels.get("job_id"):
        owner = labels.get("user") or labels.get("tenant")
        lines.append(f"job: {labels['job_id']}" + (f" (owner {owner})" if owner else ""))
    elif annotations.get(job_annotation.ANNOTATION, "").strip():  # the job holding the GPU, as Prometheus saw it
        lines.append(shorten(f"job: {annotations[job_annotation.ANNOTATION].strip()}", MAX_LINE_CHARS))
    if annotations.get("runbook_url"):
        lines.append(shorten(f"runbook: {annotations['runbook_url']}", MAX_LINE_CHARS))
    return lines


LINK_LABELS = ("acknowledge", "resolve", "open", "mark noisy")  # the order of `vigil.notifier.links.page_links`
SHORT_ACK = len(LINK_LABELS)  # then the compact acknowledge link, for the short form


def compose_incident_page(payload: WebhookPayload | None, page_status: str, incident_id: int, fallback_title: str,
                          links: list[str] = (), note: str | None = None, priority: str | None = None,
                          why: str | None = None, grafana_url: str | None = None,
                          context: PageContext = NO_CONTEXT) -> PageText:
    """The page of incident `incident_id` from its latest notification `payload` (None: the incident's
    own `fallback_title` only), with its `priority`, why it was escalated (`why`), an optional `note`
    line (who resolved it…), the signed links (`vigil.notifier.links.page_links`) and what else the
    notifier knows (`context`: the fault's history on the GPU, the symptoms that joined)."""
    if payload is None:
        text = PageText(shorten(f"[{page_status.upper()}] {fallback_title}", MAX_TITLE_CHARS),
                        _first_line(incident_id, priority))
    else:
        text = compose_page(payload, page_status, incident_id, priority, grafana_url, context)
    first, _, rest = text.body.partition("\n")
    lines = [first, *([f"escalated: {why}"] if why else []), *([rest] if rest else [])]
    if note:
        lines.append(note)
    lines += [f"{label}: {url}" for label, url in zip(LINK_LABELS, links)]
    ack = links[SHORT_ACK] if len(links) > SHORT_ACK else None
    short = short_page(payload, page_status, incident_id, fallback_title, priority, why, ack, context.recurred)
    return PageText(text.title, "\n".join(lines), short)


def short_page(payload: WebhookPayload | None, page_status: str, incident_id: int, fallback_title: str,
               priority: str | None, why: str | None, ack_url: str | None, recurred: str | None = None) -> str:
    """The SMS and phone form: one line, at most `MAX_SHORT_CHARS`, the acknowledge link kept whole."""
    head = " ".join(part for part in (priority if page_status == "firing" else page_status.upper(),
                                      f"#{incident_id}") if part)
    what = fallback_title
    action = None
    if payload is not None:
        firing = [alert for alert in payload.alerts if alert.status == "firing"] or payload.alerts
        first = firing[0] if firing else None
        if first is not None:
            where = " ".join(f"{key} {first.labels[key]}" if key == "gpu" else first.labels[key]
                             for key in ("node", "gpu") if key in first.labels)
            if not where and first.labels.get("job_id"):  # a job's alert: the job is where it broke
                where = f"job {first.labels['job_id']}"
            what = f"{first.labels.get('alertname', '?')} {where}".rstrip()
            if len(firing) > 1:
                what += f" +{len(firing) - 1}"
            key = action_of(first.labels, recurred) if page_status == "firing" else None
            if key is not None:
                action = _short_action(ACTION_TEXT[key])
    middle = f"{what}: {action}" if action else what
    if why:  # the SMS form says it in fewer characters: "No ack in 5m by ana (DRI)"
        short_why = why.replace("not acknowledged within ", "no ack in ", 1)
        middle += f". {short_why[:1].upper()}{short_why[1:]}"
    tail = f". Ack {ack_url}" if ack_url and page_status == "firing" else ""
    room = MAX_SHORT_CHARS - len(head) - 1 - len(tail)
    # (a public URL so long that the link leaves no room makes the page longer, never the link broken)
    return f"{head} {shorten(middle, max(room, 12))}{tail}"


def _short_action(text: str) -> str:
    """`drain the GPU and reset it (nvidia-smi --gpu-reset)` → `drain the GPU and reset it`."""
    return text.split(" (")[0].split(":")[0].split(";")[0]
