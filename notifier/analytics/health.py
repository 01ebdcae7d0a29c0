"""On-call health figures from `IncidentFacts` (pure: no database, no clock).

Definitions (also in `docs/oncall-health.md`):

- a *person* is any actor other than `alertmanager` (the CLI's `--by`, the console's login);
- *acknowledged*: a person acknowledged the incident (its first `acknowledged` event);
  MTTA = mean of (first acknowledgement − opened_at) over acknowledged incidents;
- *resolved*: the incident is resolved now (by a person or by Alertmanager);
  MTTR = mean of (resolved_at − opened_at) over resolved incidents;
- *escalated*: a tier after the first was paged (`tier_paged` with tier ≥ 1: the ack timer ran out, an
  SLA breach, or nobody on call in the first tier) or a person pressed "escalate now";
- *acted on*: acknowledged by a person **and** a person did more: a note, a resolve by hand, or an
  escalate now. An incident Alertmanager resolved with nobody touching it is not acted on;
- a *page* is a firing page sent to a person (one per contact: a phone call and an SMS are two);
  *outside hours* when it was sent outside that person's working hours, in their time zone;
- a *paged* incident sent at least one page; the acknowledged and acted-on shares are of paged
  incidents;
- SLA compliance per target (ack, resolve): met / (met + breached), from the incident's due and
  breach times; incidents still within their target (pending) and priorities without one are left out.
  The ack target is met by an incident resolved (by Alertmanager or a person) before its deadline even
  though nobody acknowledged it: *resolved before ack* counts those incidents (resolved before any
  person's acknowledgement), the gap between the acknowledged share and the ack SLA;
- a rule's (alert name's) *noise*: of its paged incidents, those a person marked noisy or not
  actionable (the newest mark counts; `actionable` withdraws one) and those Alertmanager resolved before
  anyone acknowledged them (*auto-resolved before ack*); the *noise score* is the share of its paged
  incidents that are either.

Averages and shares over nothing are None.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Callable, Iterable

from vigil.notifier.analytics.queries import IncidentFacts
from vigil.notifier.core.incidents import NOISE_VERDICTS
from vigil.common.times import rfc3339
from vigil.oncall.model import OncallConfig
from vigil.oncall.plan import person_hours, person_zone

ALERTMANAGER = "alertmanager"
ACTIONS = ("note", "resolved", "escalated")  # what a person does beyond acknowledging
NOISIEST = 10
DAY_S = 86400
NO_TEAM, NO_PRIORITY, NO_ALERTNAME = "none", "none", "(no alertname)"

WorkingHoursFn = Callable[[str, float], bool]  # (person, UNIX seconds) -> inside their working hours


def working_hours_of(oncall: OncallConfig) -> WorkingHoursFn:
    """Whether a person is at work at a moment: their zone (own, team's, file's) and their team's hours
    (else the file's), as the notification rules judge `hours: working`.

    A person's windows are worked out once per UTC day their pages fall on (`WorkingHours.windows` from
    that day's start covers the local day before it to a week after), not once per page."""
    people: dict[str, tuple] = {}
    windows: dict[tuple[str, int], list[tuple[float, float]]] = {}

    def working(person: str, at: float) -> bool:
        if person not in people:
            people[person] = (person_hours(oncall, person), person_zone(oncall, person))
        day = int(at // DAY_S)
        if (person, day) not in windows:
            hours, zone = people[person]
            windows[person, day] = hours.windows(zone, day * DAY_S)
        return any(start <= at < end for start, end in windows[person, day])
    return working


def is_person(actor: str | None) -> bool:
    return actor is not None and actor != ALERTMANAGER


@dataclass(frozen=True)
class Judged:
    """One incident, judged: who acknowledged it and when, and what people did."""

    facts: IncidentFacts
    acknowledged_by: str | None
    acknowledged_after_s: float | None
    escalated: bool
    acted_on: bool
    outside_hours: tuple[bool, ...]  # one per page, in `facts.pages` order
    marked_noisy: bool = False  # its newest mark says noisy or not actionable
    resolved_before_ack: bool = False  # resolved (by anyone) before a person acknowledged it
    auto_resolved_before_ack: bool = False  # Alertmanager resolved it before a person acknowledged it

    @property
    def team(self) -> str:
        return self.facts.team or NO_TEAM

    @property
    def priority(self) -> str:
        return self.facts.priority or NO_PRIORITY

    @property
    def resolved_after_s(self) -> float | None:
        f = self.facts
        return None if f.resolved_at is None else f.resolved_at - f.opened_at

    def sla(self, target: str) -> str | None:
        """met | breached | pending, or None when the priority has no such target."""
        f = self.facts
        due, breached = getattr(f, f"{target}_due_at"), getattr(f, f"{target}_breached_at")
        if due is None:
            return None
        if breached is not None:
            return "breached"
        done = f.resolved_at is not None or (target == "ack" and self.acknowledged_by is not None)
        return "met" if done else "pending"


def judge(facts: IncidentFacts, working: WorkingHoursFn) -> Judged:
    ack = next((e for e in facts.events if e.kind == "acknowledged" and is_person(e.actor)), None)
    escalated = any((e.kind == "tier_paged" and (e.tier or 0) >= 1) or (e.kind == "escalated" and is_person(e.actor))
                    for e in facts.events)
    acted = ack is not None and any(e.kind in ACTIONS and is_person(e.actor) for e in facts.events)
    marks = [e.verdict for e in facts.events if e.kind == "marked"]
    resolved = next((e for e in facts.events if e.kind == "resolved"), None)
    before_ack = resolved is not None and (ack is None or ack.at > resolved.at)
    return Judged(facts, ack.actor if ack else None, ack.at - facts.opened_at if ack else None, escalated, acted,
                  tuple(not working(p.person, p.sent_at) for p in facts.pages),
                  marked_noisy=bool(marks) and marks[-1] in NOISE_VERDICTS, resolved_before_ack=before_ack,
                  auto_resolved_before_ack=before_ack and resolved.actor == ALERTMANAGER)


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _share(part: int, whole: int) -> float | None:
    return part / whole if whole else None


def summary(judged: Iterable[Judged]) -> dict:
    """The figures of a set of incidents (a team's, a priority's, all of them)."""
    judged = list(judged)
    paged = [j for j in judged if j.facts.pages]
    acked = [j.acknowledged_after_s for j in judged if j.acknowledged_by is not None]
    resolved = [j.resolved_after_s for j in judged if j.resolved_after_s is not None]
    escalated = sum(j.escalated for j in judged)
    sla = {}
    for target in ("ack", "resolve"):
        seen = Counter(j.sla(target) for j in judged)
        sla[target] = dict(met=seen["met"], breached=seen["breached"], pending=seen["pending"],
                           compliance=_share(seen["met"], seen["met"] + seen["breached"]))
    return dict(
        incidents=len(judged), paged_incidents=len(paged),
        acknowledged=len(acked), mtta_seconds=_mean(acked),
        resolved=len(resolved), mttr_seconds=_mean(resolved),
        escalated=escalated, escalation_rate=_share(escalated, len(judged)),
        pages=sum(len(j.facts.pages) for j in judged),
        pages_outside_hours=sum(sum(j.outside_hours) for j in judged),
        sla=sla, resolved_before_ack=sum(j.resolved_before_ack for j in judged),
        acknowledged_share=_share(sum(j.acknowledged_by is not None for j in paged), len(paged)),
        acted_on=sum(j.acted_on for j in paged),
        acted_on_share=_share(sum(j.acted_on for j in paged), len(paged)),
    )


def people(judged: list[Judged]) -> list[dict]:
    """Per person: pages received (by channel, outside hours), acknowledgements (and their MTTA), and
    the notes, resolves and escalations they did; busiest first."""
    rows: dict[str, dict] = defaultdict(lambda: dict(pages=0, pages_outside_hours=0, pages_by_channel=Counter(),
                                                     acks=[], note=0, resolved=0, escalated=0))
    for j in judged:
        for page, outside in zip(j.facts.pages, j.outside_hours):
            row = rows[page.person]
            row["pages"] += 1
            row["pages_outside_hours"] += outside
            row["pages_by_channel"][page.channel] += 1
        if j.acknowledged_by is not None:
            rows[j.acknowledged_by]["acks"].append(j.acknowledged_after_s)
        for e in j.facts.events:
            if e.kind in ACTIONS and is_person(e.actor):
                rows[e.actor][e.kind] += 1
    found = [dict(person=person, pages=r["pages"], pages_outside_hours=r["pages_outside_hours"],
                  pages_by_channel=dict(sorted(r["pages_by_channel"].items())), acknowledged=len(r["acks"]),
                  mtta_seconds=_mean(r["acks"]), notes=r["note"], resolved=r["resolved"], escalated=r["escalated"])
             for person, r in rows.items()]
    return sorted(found, key=lambda r: (-r["pages"], -r["acknowledged"], r["person"]))


def rule_noise(judged: list[Judged]) -> list[dict]:
    """Per alert name (rule): incidents, pages sent, paged incidents acknowledged (and acted on), marked
    noisy, auto-resolved before ack, and the noise score; noisiest first (score, then pages)."""
    found = []
    for name, group in grouped(judged, lambda j: j.facts.alertname or NO_ALERTNAME).items():
        paged = [j for j in group if j.facts.pages]
        acknowledged = sum(j.acknowledged_by is not None for j in paged)
        noisy = sum(j.marked_noisy for j in paged)
        auto = sum(j.auto_resolved_before_ack for j in paged)
        found.append(dict(alertname=name, incidents=len(group), pages=sum(len(j.facts.pages) for j in group),
                          paged_incidents=len(paged), acknowledged=acknowledged,
                          acknowledged_share=_share(acknowledged, len(paged)),
                          acted_on_share=_share(sum(j.acted_on for j in paged), len(paged)),
                          marked_noisy=noisy, auto_resolved_before_ack=auto,
                          noise_score=_share(sum(j.marked_noisy or j.auto_resolved_before_ack for j in paged),
                                             len(paged))))
    return sorted(found, key=lambda r: (-(r["noise_score"] or 0), -r["pages"], r["alertname"]))


def noisiest_alerts(rules: list[dict], top: int = NOISIEST) -> list[dict]:
    """The rows of `rule_noise` with the most pages sent (then incidents)."""
    return sorted(rules, key=lambda r: (-r["pages"], -r["incidents"], r["alertname"]))[:top]


def grouped(judged: list[Judged], key: Callable[[Judged], str]) -> dict[str, list[Judged]]:
    groups: dict[str, list[Judged]] = defaultdict(list)
    for j in judged:
        groups[key(j)].append(j)
    return dict(sorted(groups.items()))


def report(facts: list[IncidentFacts], working: WorkingHoursFn, start: float, end: float,
           team: str | None = None) -> dict:
    """The whole report (the JSON shape of `vigil report oncall --json` and `GET /api/v1/reports/oncall`)."""
    judged = [judge(f, working) for f in facts]
    rules = rule_noise(judged)
    return {
        "from": rfc3339(start), "to": rfc3339(end), "team": team,
        "overall": summary(judged),
        "teams": [dict(team=name, **summary(group)) for name, group in grouped(judged, lambda j: j.team).items()],
        "priorities": [dict(priority=name, **summary(group))
                       for name, group in grouped(judged, lambda j: j.priority).items()],
        "people": people(judged),
        "noisiest_alerts": noisiest_alerts(rules),
        "rules": rules,
    }
