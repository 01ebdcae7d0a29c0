"""What the notifier's store says about an incident, arranged as a postmortem's sections (pure).

Input is the incident as the REST API shows it (`notifier.api.incidents.incident_detail`: the incident
with its `alerts`, `timeline` and `pages`), the other incidents (for "related"), the metric evidence
gathered from Prometheus (`evidence.Evidence`, or None when Prometheus was not asked) and `now` (for a
stopped stack: when it stopped, `stopped_at`, which an incident still open then is measured up to).
Every time is Unix seconds here; the templates format them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from vigil.common.times import parse_time
from vigil.notifier.incident_text import event_text

from .page_fate import due_times, page_results, unsent_fates

RELATED_WITHIN_S = 30 * 86400
# a page sent this long after it was due (queued, plus the delay its policy step asked for), or after
# more than one attempt, counts as late
LATE_AFTER_S = 60.0


@dataclass
class Page:
    person: str
    contact: str
    kind: str
    tier: int | None
    status: str  # firing | resolved (what the page said)
    queued_at: float | None
    due_at: float | None  # when it was to go out: queued_at plus its step's delay (queued_at when unknown)
    sent_at: float | None
    attempts: int
    result: str  # sent | failed | pending | digested | not sent: acknowledged | held: maintenance window 3 | … (page_fate)
    errors: list[str]
    late: bool

    @property
    def delay_s(self) -> float | None:
        """How long after it was due it went out."""
        return None if self.sent_at is None or self.due_at is None else self.sent_at - self.due_at


@dataclass
class Facts:
    incident: dict
    title: str
    opened_at: float
    resolved_at: float | None
    now: float
    alertnames: list[str]
    nodes: list[str]
    gpus: list[dict]  # {node, gpu, uuid}
    jobs: list[str]
    first_alert: dict  # {name, at, summary}
    first_sign_at: float | None
    first_sign_how: str
    pages: list[Page]
    escalations: list[dict]  # {at, text}
    timeline: list[dict]  # {at, kind, actor, detail, text}
    related: list[dict]  # {id, title, opened_at, state, shares, alertname, lasted_s}
    symptoms: list[dict] = field(default_factory=list)  # incidents that joined this one: {id, title, opened_at, state, priority}
    charts: list = field(default_factory=list)  # evidence.Chart
    stopped_at: float | None = None  # when the stack stopped, for a postmortem written after (then `now` too)

    @property
    def open_at_stop(self) -> float | None:
        """When the stack stopped, if the incident was still open then (None otherwise)."""
        return self.stopped_at if self.resolved_at is None else None

    @property
    def open_for_at_stop_s(self) -> float | None:
        """How long the incident had been open when the stack stopped, if it was still open then."""
        return None if self.open_at_stop is None else self.open_at_stop - self.opened_at

    @property
    def end(self) -> float:
        return self.resolved_at if self.resolved_at is not None else self.now

    @property
    def duration_s(self) -> float:
        return self.end - (self.first_sign_at if self.first_sign_at is not None else self.opened_at)

    @property
    def time_to_detect_s(self) -> float | None:
        return None if self.first_sign_at is None else max(0.0, self.opened_at - self.first_sign_at)

    @property
    def received_at(self) -> float | None:
        """When the notifier got the first notification (the timeline's first event)."""
        return min((e["at"] for e in self.timeline), default=None)

    @property
    def first_acknowledgement(self) -> dict | None:
        """The timeline's first `acknowledged` event: what happened, which an escalation (it hands the
        acknowledgement on, clearing the incident's `acknowledged_at`) or a re-page does not undo."""
        return next((e for e in self.timeline if e["kind"] == "acknowledged"), None)

    @property
    def acknowledged_at(self) -> float | None:
        first = self.first_acknowledgement
        return first["at"] if first is not None else parse_time(self.incident.get("acknowledged_at"))

    @property
    def acknowledged_by(self) -> str:
        first = self.first_acknowledgement
        return (first["actor"] if first is not None else self.incident.get("acknowledged_by")) or "unknown"

    @property
    def time_to_acknowledge_s(self) -> float | None:
        return None if self.acknowledged_at is None else self.acknowledged_at - self.opened_at

    @property
    def time_to_resolve_s(self) -> float | None:
        return None if self.resolved_at is None else self.resolved_at - self.opened_at

    @property
    def sla(self) -> dict:
        return self.incident.get("sla") or {}

    @property
    def paged(self) -> list[tuple[str, str, str]]:
        """(person, contact, channel kind) of each firing page sent (or tried and failed), in order, once each;
        a page still waiting (a fallback channel, due later) when the incident was acknowledged is not."""
        seen: dict[tuple[str, str, str], None] = {}
        for page in self.pages:
            if page.status == "firing" and (page.sent_at is not None or page.attempts):
                seen.setdefault((page.person, page.contact, page.kind))
        return list(seen)

    @property
    def troubled_pages(self) -> list[Page]:
        return [page for page in self.pages if page.late or page.result == "failed"]


def incident_facts(incident: dict, others: list[dict], now: float, jobs_seen: list[str] = (),
                   first_sign_at: float | None = None, first_sign_how: str = "") -> Facts:
    """The postmortem's facts about `incident` (an `incident_detail` dict); `others`: incidents to
    look through for related ones; `jobs_seen` and `first_sign_at` come from the metrics, when known."""
    alerts = incident.get("alerts") or []
    opened_at = parse_time(incident["opened_at"])
    if opened_at is None:  # an older version stored an alert starting at Alertmanager's zero time: its first event
        opened_at = next((parse_time(e["at"]) for e in incident.get("timeline") or [] if e.get("at")), now)
    firsts = sorted(((parse_time(a.get("startsAt")) or opened_at, a) for a in alerts), key=lambda item: item[0])
    first_at, first = firsts[0] if firsts else (opened_at, {"labels": incident.get("labels") or {}})
    labels = [a.get("labels") or {} for a in alerts] or [incident.get("labels") or {}]
    events = incident.get("timeline") or []
    escalated = escalation_texts(events)
    pages = incident.get("pages") or []
    results = page_results(pages, events, incident.get("status") == "resolved", parse_time)
    due = due_times(pages, events, parse_time)
    fates = unsent_fates(pages, events, results, parse_time)
    gpus = {(l["node"], l["gpu"]): l.get("uuid", "") for l in labels if "node" in l and "gpu" in l}
    jobs = {l["job_id"] for l in labels if l.get("job_id")} | set(jobs_seen)
    return Facts(
        incident=incident, title=incident.get("title") or f"incident {incident['id']}", opened_at=opened_at,
        resolved_at=parse_time(incident.get("resolved_at")), now=now,
        alertnames=sorted({l["alertname"] for l in labels if "alertname" in l}),
        nodes=sorted({l["node"] for l in labels if "node" in l}),
        gpus=[dict(node=node, gpu=gpu, uuid=uuid) for (node, gpu), uuid in sorted(gpus.items())],
        jobs=sorted(jobs),
        first_alert=dict(name=(first.get("labels") or {}).get("alertname", "?"), at=first_at,
                         summary=first.get("summary", "")),
        first_sign_at=first_sign_at, first_sign_how=first_sign_how,
        pages=[_page(p, result, due.get(i)) for i, (p, result) in enumerate(zip(pages, results))],
        escalations=[dict(at=parse_time(events[i]["at"]), text=what + _by(events[i]) + note)
                     for i, (what, note) in escalated.items()],
        timeline=[dict(at=parse_time(e["at"]), kind=e["kind"], actor=e.get("actor") or "", detail=e.get("detail") or {},
                       text="".join(escalated[i]) if i in escalated else _with_fate(event_text(e), fates.get(i)))
                  for i, e in enumerate(events)],
        related=related_incidents(incident, others, now), symptoms=symptoms_of(incident, others),
    )


def escalation_texts(events: list[dict]) -> dict[int, tuple[str, str]]:
    """What each escalation of the timeline did, as people count tiers (the first is tier 1), keyed by
    its index in `events`: an `escalated` event (someone escalated; `to_tier` is the index it asked
    for, which may be past the last tier when the policy starts again) names the tier the engine then
    paged; a `tier_paged` event past the first tier, or one that starts a new round, names who it paged;
    a maintenance window's `escalation_paused` / `escalation_resumed` say where it stopped and for how long.
    Each text comes in two parts, (what, a note on the round or ""), so a caller can put who did it
    between."""
    texts: dict[int, tuple[str, str]] = {}
    round_seen = 0
    for index, event in enumerate(events):
        d = event.get("detail") or {}
        if event["kind"] == "escalated":
            paged = next((e for e in events[index + 1:] if e["kind"] == "tier_paged"), None)
            if paged is None:  # the engine had not paged it yet
                texts[index] = (f"escalated to tier {(d.get('to_tier') or 0) + 1}", "")
                continue
            tier, round = paged["detail"].get("tier") or 0, paged["detail"].get("round") or 0
            texts[index] = (f"escalated to tier {tier + 1}", _repeated(round) if round > round_seen else "")
        elif event["kind"] == "tier_paged":
            tier, round = d.get("tier") or 0, d.get("round") or 0
            if tier > 0 or round > round_seen:
                again = " again" if (d.get("repeat") or 0) > 0 else ""
                texts[index] = (f"tier {tier + 1} paged{again}: {', '.join(d.get('people') or []) or 'nobody'}",
                                _repeated(round) if round > round_seen else "")
            round_seen = max(round_seen, round)
        elif event["kind"] in ("escalation_paused", "escalation_resumed"):  # a maintenance window held it
            texts[index] = (event_text(event), "")
    return texts


def _repeated(round: int) -> str:
    return f" (the policy repeated from the first tier: round {round + 1})"


def _page(page: dict, result: str, due: float | None) -> Page:
    """`page` of the API as a Page; `due`: when it was to go out (from its `page_queued` event), if known."""
    attempts = page.get("attempts") or []
    queued, sent = parse_time(page.get("created_at")), parse_time(page.get("sent_at"))
    due = queued if due is None else due
    late = sent is not None and (len(attempts) > 1 or (due is not None and sent - due > LATE_AFTER_S))
    return Page(person=page.get("person") or "?", contact=page.get("contact") or "", kind=page.get("kind") or "",
                tier=page.get("tier"), status=page.get("status") or "firing", queued_at=queued, due_at=due, sent_at=sent,
                attempts=len(attempts), result=result,
                errors=[a["error"] for a in attempts if not a.get("ok") and a.get("error")], late=late)


def _by(event: dict) -> str:
    return f" by {event['actor']}" if event.get("actor") else ""


def _with_fate(text: str, fate: str | None) -> str:
    """A `page_queued` line that says when the page it queued never went out."""
    return text if fate is None else f"{text}; {fate}"


def _places(labels: dict) -> set[tuple[str, ...]]:
    """What an incident's labels point at: its node, and its GPU (node, gpu) when it names one."""
    places = set()
    if labels.get("node"):
        places.add(("node", labels["node"]))
        if labels.get("gpu") not in (None, ""):
            places.add(("gpu", labels["node"], str(labels["gpu"])))
    return places


def symptoms_of(incident: dict, others: list[dict]) -> list[dict]:
    """The incidents that joined `incident` as symptoms of its fault (`part_of`), oldest first."""
    return [dict(id=other["id"], title=other.get("title", ""), opened_at=parse_time(other.get("opened_at")),
                 state=other.get("state") or other.get("status"), priority=other.get("priority"))
            for other in others if other.get("part_of") == incident["id"]]


def related_incidents(incident: dict, others: list[dict], now: float) -> list[dict]:
    """Other incidents of the last 30 days (before now) on the same node or GPU, newest first."""
    mine = set().union(*(_places(a.get("labels") or {}) for a in incident.get("alerts") or []),
                       _places(incident.get("labels") or {}))
    found = []
    same_fault = {incident["id"], incident.get("part_of")}  # its symptoms and its cause: this fault, not another
    for other in others:
        opened = parse_time(other.get("opened_at"))
        if (other["id"] in same_fault or other.get("part_of") == incident["id"] or opened is None
                or not now - RELATED_WITHIN_S <= opened <= now):
            continue
        shared = mine & _places(other.get("labels") or {})
        if shared:
            gpu = next((p for p in shared if p[0] == "gpu"), None)
            shares = f"GPU {gpu[2]} of {gpu[1]}" if gpu else f"node {next(iter(shared))[1]}"
            resolved = parse_time(other.get("resolved_at"))
            found.append(dict(id=other["id"], title=other.get("title", ""), opened_at=opened,
                              state=other.get("state") or other.get("status"), shares=shares,
                              alertname=(other.get("labels") or {}).get("alertname"),
                              lasted_s=(resolved if resolved is not None else now) - opened))
    return sorted(found, key=lambda r: -r["opened_at"])
