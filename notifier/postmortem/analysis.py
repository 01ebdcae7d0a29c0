"""The parts of a postmortem a lead fills in, pre-drafted where vigil knows (pure: from the facts, the
jobs and GPU histories Prometheus gave, and the XID catalogue):

- **impact** in a training cluster's terms: each job the fault stopped (owner, GPUs, how long), the
  GPU-hours lost (a synchronous job stops whole: all its GPUs count), GPUs out of service without a job,
  and for a GPU that failed before this month, what its incidents cost so far;
- **the story**: the timeline as a person tells it, the page plumbing (queued, each attempt, a fallback)
  folded into one row per person paged;
- **contributing factors**: what the XID means and its repair action, the GPU's history before the fault
  (XIDs, ECC, remaps), its failure risk an hour before, and the warnings that fired earlier, with their
  lead time;
- **what went well / badly** (detection, SLA, escalations, pages) and **suggested action items** (the
  repair, the job to resubmit, a late or silent alert, an on-call gap, a GPU that keeps failing).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone

from vigil.common.durations import format_duration
from vigil.rules.xid_catalog import ACTION_TEXT, XID_CATALOG

from .facts import Facts
from .history import GpuHistory, Job

# what a person does not retell: the page plumbing, folded into the row of the tier that paged
PLUMBING = frozenset({"page_queued", "page_attempt", "page_fallback", "page_digested", "held", "steady"})
# alerts whose XID is in their name, not a label (rules/specs: their `action` label is that XID's)
XID_OF_ALERT = {"GpuFallenOffBus": 79, "GpuUncorrectableEccErrors": 48, "GpuRowRemapFailure": 64}
# alerts that warn of a GPU failure before it comes (an earlier one on the same GPU is a lead time)
WARNINGS = frozenset({"GpuFailureRiskHigh", "GpuXidWarning", "GpuCorrectableEccRateHigh", "GpuTemperatureHigh",
                      "GpuThermalThrottling", "GpuUtilizationAnomaly", "GpuRemapPending"})
SLOW_DETECTION_S = 300.0
# how the story names an event whose own text says only the details
SAID = {"opened": "incident opened", "routed": "routed", "tier_paged": "paged", "acknowledged": "acknowledged",
        "resolved": "resolved", "reopened": "reopened", "note": "note", "alert_added": "another alert joined"}


@dataclass
class Analysis:
    jobs: list[dict] = field(default_factory=list)  # {job_id, owner, gpus, down_s, gpu_hours}
    gpu_hours_lost: float = 0.0  # of the jobs the fault stopped
    idle_gpu_hours: float = 0.0  # affected GPUs no job held: capacity out of service
    month: dict | None = None  # {incidents, hours} of the same GPU this month before this one
    story: list[dict] = field(default_factory=list)  # {at, who, what}
    factors: list[str] = field(default_factory=list)
    went_well: list[str] = field(default_factory=list)
    went_badly: list[str] = field(default_factory=list)
    actions: list[dict] = field(default_factory=list)  # {what, type, owner}
    summary: str = ""


def hours(seconds: float) -> float:
    return round(seconds / 3600.0, 4)  # shown to 3 significant digits: a drill's few seconds are not 0


def analyse(facts: Facts, jobs: list[Job], histories: list[GpuHistory]) -> Analysis:
    found = Analysis()
    down_s = facts.duration_s
    for job in jobs:  # GPUs 0: Prometheus did not say (no GPU-hours then, never a guess)
        found.jobs.append(dict(job_id=job.job_id, owner=job.owner, gpus=job.gpus or None, down_s=down_s,
                               gpu_hours=hours(job.gpus * down_s) if job.gpus else None))
    found.gpu_hours_lost = round(sum(j["gpu_hours"] or 0.0 for j in found.jobs), 4)
    if not jobs:
        found.idle_gpu_hours = hours(len(facts.gpus) * down_s)
    found.month = _this_month(facts)
    found.story = story(facts)
    found.factors = factors(facts, histories)
    found.went_well, found.went_badly = verdicts(facts)
    found.actions = action_items(facts, found, histories)
    found.summary = summary(facts, found)
    return found


def _this_month(facts: Facts) -> dict | None:
    """The same GPU's earlier incidents this calendar month (UTC): how many, and the hours they lasted."""
    month = datetime.fromtimestamp(facts.opened_at, timezone.utc).replace(day=1, hour=0, minute=0, second=0)
    earlier = [r for r in facts.related if r["shares"].startswith("GPU ")
               and month.timestamp() <= r["opened_at"] < facts.opened_at]
    if not earlier:
        return None
    return dict(incidents=len(earlier), hours=hours(sum(r.get("lasted_s") or 0.0 for r in earlier)))


def story(facts: Facts) -> list[dict]:
    """The timeline in words: one row a person would tell; who each tier paged, and how it reached them."""
    rows = []
    for event in facts.timeline:
        if event["kind"] in PLUMBING:
            continue
        text = event["text"]
        if event["kind"] == "tier_paged":
            detail = event.get("detail") or {}
            reached = [_reached(facts, person, detail.get("tier")) for person in detail.get("people") or []]
            text = f"{text}; " + "; ".join(reached) if reached else text
        elif event["kind"] == "resolved":
            told = sorted({f"{p.person} ({p.kind})" for p in facts.pages if p.status == "resolved" and p.sent_at})
            text = "; ".join(part for part in (text, f"the all-clear went to {', '.join(told)}" if told else "") if part)
        said = SAID.get(event["kind"])
        rows.append(dict(at=event["at"], who=event.get("actor") or "",
                         what=f"{said}: {text}" if said and text else said or text or event["kind"]))
    return rows


def _reached(facts: Facts, person: str, tier: int | None) -> str:
    """How the pages of one tier reached `person`: each contact, its fate, when."""
    mine = [p for p in facts.pages if p.person == person and p.status == "firing" and p.tier == tier]
    if not mine:
        return f"{person}: no page queued"
    said = []
    for page in mine:
        when = f" {datetime.fromtimestamp(page.sent_at, timezone.utc):%H:%M:%S}" if page.sent_at else ""
        tries = f" after {page.attempts} attempts" if page.attempts > 1 else ""
        said.append(f"{page.kind or page.contact} {page.result}{when}{tries}")
    return f"{person} by " + ", ".join(said)


def factors(facts: Facts, histories: list[GpuHistory]) -> list[str]:
    lines = []
    labels = [a.get("labels") or {} for a in facts.incident.get("alerts") or []] or [facts.incident.get("labels") or {}]
    xids = sorted({int(l["xid"]) for l in labels if str(l.get("xid", "")).isdigit()} |
                  {XID_OF_ALERT[l["alertname"]] for l in labels if l.get("alertname") in XID_OF_ALERT})
    for xid in xids:
        entry = XID_CATALOG.get(xid)
        if entry is not None:
            recurs = " If it comes back after that, the hardware is suspect." if entry.recurs_to_hardware else ""
            lines.append(f"XID {xid} ({entry.name}): {ACTION_TEXT[entry.action]}.{recurs}")
    for history in histories:
        where = f"GPU {history.gpu} of {history.node}"
        before = [f"XID {xid} ×{count}" for xid, count in sorted(history.xids.items())]
        before += [f"{kind} ECC errors ×{count}" for kind, count in sorted(history.ecc.items())]
        before += ["a row remap pending"] * history.remap_pending + ["a failed row remap"] * history.remap_failed
        lines.append(f"{where} in the 30 days before: " + (", ".join(before) if before else "no XID, ECC error or row remap")
                     + ".")
        if history.risk is not None:
            above = history.risk_threshold is not None and history.risk >= history.risk_threshold
            limit = f" (alarm threshold {history.risk_threshold:.2%})" if history.risk_threshold is not None else ""
            lines.append(f"{where}'s failure risk in the hour before the first sign: {history.risk:.2%}{limit}: "
                         + ("above it, vigil saw it coming." if above else "below it, no warning from the risk model."))
    for warning in warned_before(facts):
        lines.append(f"{warning['alertname']} fired {format_duration(round(warning['lead_s']))} before "
                     f"(incident #{warning['id']}): a warning with that lead time.")
    return lines


def warned_before(facts: Facts) -> list[dict]:
    """Earlier incidents on the same GPU that warned of a failure, within a day before this one."""
    found = []
    for related in facts.related:
        name = related.get("alertname") or ""
        lead = facts.opened_at - related["opened_at"]
        if name in WARNINGS and related["shares"].startswith("GPU ") and 0 < lead <= 86400:
            found.append(dict(id=related["id"], alertname=name, lead_s=lead))
    return found


def verdicts(facts: Facts) -> tuple[list[str], list[str]]:
    good, bad = [], []
    detect = facts.time_to_detect_s
    if detect is not None:
        (good if detect <= SLOW_DETECTION_S else bad).append(
            f"Detection: the alert fired {format_duration(round(detect))} after the first sign in the metrics.")
    for which, verdict in (facts.sla or {}).items():
        if verdict == "met":
            good.append(f"The {'acknowledgement' if which == 'ack' else 'resolution'} SLA was met.")
        elif verdict in ("missed", "breached"):
            bad.append(f"The {'acknowledgement' if which == 'ack' else 'resolution'} SLA was missed.")
    if facts.escalations:
        bad.append(f"It escalated {len(facts.escalations)} time(s): " + "; ".join(e["text"] for e in facts.escalations) + ".")
    elif facts.acknowledged_at is not None:
        good.append(f"The first person paged acknowledged it ({facts.acknowledged_by}), no escalation.")
    if facts.troubled_pages:
        bad.append(f"{len(facts.troubled_pages)} page(s) failed or went out late (see Response).")
    if any(e["kind"] == "tier_empty" for e in facts.timeline):
        bad.append("A tier had nobody on call when it was to be paged.")
    return good, bad


def action_items(facts: Facts, found: Analysis, histories: list[GpuHistory]) -> list[dict]:
    team = facts.incident.get("team") or "the on-call team"
    labels = facts.incident.get("labels") or {}
    items = []
    action = labels.get("action")
    if action in ACTION_TEXT:
        where = ", ".join(f"{g['node']} GPU {g['gpu']}" for g in facts.gpus) or ", ".join(facts.nodes)
        items.append(dict(what=f"Repair {where}: {ACTION_TEXT[action]}", type="mitigate", owner=team))
    for job in found.jobs:
        items.append(dict(what=f"Resubmit job {job['job_id']} from its last checkpoint, away from the failed GPU",
                          type="mitigate", owner=job["owner"]))
    if facts.time_to_detect_s is not None and facts.time_to_detect_s > SLOW_DETECTION_S:
        items.append(dict(what=f"The alert came {format_duration(round(facts.time_to_detect_s))} after the first sign: "
                               f"shorten the `for:` of {', '.join(facts.alertnames)} or alert on a precursor",
                          type="prevent", owner="alert rule authors"))
    if any(h.xids or h.ecc or h.remap_pending for h in histories) and not warned_before(facts):
        items.append(dict(what="Precursors showed in the GPU's history but nothing warned: review the failure-risk "
                               "threshold and the ECC / XID warning rules", type="prevent", owner="alert rule authors"))
    if found.month is not None:
        items.append(dict(what=f"The GPU failed {found.month['incidents'] + 1} times this month: inspect or replace it",
                          type="prevent", owner=team))
    if facts.escalations or any(e["kind"] == "tier_empty" for e in facts.timeline):
        items.append(dict(what="Review the on-call schedule and contacts: a tier was not reached or had nobody",
                          type="process", owner=team))
    return items


def summary(facts: Facts, found: Analysis) -> str:
    """What broke and what it stopped, in one clause: "GpuLost on GPU 0 of node-1, stopping job 7 of
    llm/ana (8 GPUs, 2.1 GPU-hours lost)"."""
    what = ", ".join(facts.alertnames) or "An alert"
    where = ", ".join(f"GPU {g['gpu']} of {g['node']}" for g in facts.gpus) or ", ".join(facts.nodes) or "the fleet"
    stopped = [f"job {j['job_id']}" + (f" of {j['owner']}" if j["owner"] != "unknown" else "")
               + (f" ({j['gpus']} GPUs)" if j["gpus"] else "") for j in found.jobs]
    lost = f", {found.gpu_hours_lost:.3g} GPU-hours lost" if found.gpu_hours_lost else ""
    return f"{what} on {where}" + (f", stopping {'; '.join(stopped)}{lost}" if stopped else "")
