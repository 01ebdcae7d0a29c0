"""One line of text saying what an incident's timeline event means (the CLI's `incidents show` and the
postmortem's timeline print the same words)."""

from __future__ import annotations

from vigil.common.durations import format_duration
from vigil.common.times import utc_text

_TARGETS = {"ack": "acknowledge", "resolve": "resolve"}  # an `sla_breach` event's `which`, in words


def event_text(event: dict) -> str:
    """One line saying what a timeline event means."""
    d, kind = event.get("detail") or {}, event["kind"]
    to = f"{d.get('person')} via {d.get('contact') or d.get('kind')}"
    tier = f"tier {d['tier'] + 1}" if isinstance(d.get("tier"), int) else "no tier"
    if kind == "page_queued":
        wait = d.get("due_in_s") or 0
        return f"{d.get('status', 'firing')} page to {to} ({tier})" + (f", due in {wait:.0f} s" if wait else "")
    if kind == "tier_paged":
        why = f" — {d['why']}" if d.get("why") else ""
        held = f", held until {d['held_until']}" if d.get("held_until") else ""
        named = f" ({d['tier_name']})" if d.get("tier_name") and d.get("tier_name") != tier else ""
        return f"{tier}{named}: {', '.join(d.get('people') or [])}{why}{held}"
    if kind == "page_attempt":
        result = "sent" if d.get("ok") else f"FAILED: {d.get('error')}"
        return f"{d.get('status', 'page')} page to {to}, attempt {d.get('attempt')}: {result}"
    if kind == "page_fallback":
        return f"{d.get('person')}: {d.get('failed_contact')} failed {d.get('attempts')} times, trying {d.get('contact')}"
    if kind == "page_held":
        return f"page to {to} held: {window_text(d)}"
    if kind == "escalation_paused":
        until = f" until {utc_text(d['until'])}" if d.get("until") else ""
        where = f"at {tier}" if isinstance(d.get("tier"), int) else "(acknowledged: its re-page waits)"
        return f"escalation paused {where}: {window_text(d)}{until}"
    if kind == "escalation_resumed":
        where = f"at {tier}" if isinstance(d.get("tier"), int) else "(acknowledged: not paged)"
        paused = "" if d.get("paused_for_s") is None else f", paused {format_duration(round(d['paused_for_s']))}"
        return f"escalation resumed {where}: maintenance window {d.get('window')} over{paused}"
    if kind == "page_digested":
        return f"page to {to} folded into digest page {d.get('digest')} ({d.get('pages')} pages)"
    if kind == "note":
        return str(d.get("text", ""))
    return _incident_text(kind, d, tier)


def _incident_text(kind: str, d: dict, tier: str) -> str:
    """The words of the events that open, route, answer and close an incident (`event_text`)."""
    if kind == "opened":
        return str(d.get("title") or "")
    if kind == "routed":
        return f"policy {d.get('policy') or '-'}, priority {d.get('priority') or '-'}, team {d.get('team') or '-'}"
    if kind == "alert_added":
        return "new alert: " + ", ".join(d.get("alerts") or ["?"])
    if kind == "reopened":
        return "firing again" if d.get("notification") is not None else ""
    if kind == "tier_empty":
        return f"{tier} ({d.get('tier_name')}): nobody on call, on to the next tier"
    if kind == "ack_expired":
        lasted = "" if d.get("acknowledged_for_s") is None else f" after {format_duration(round(d['acknowledged_for_s']))}"
        return f"{d.get('acknowledged_by')}'s acknowledgement lapsed{lasted}: paging again"
    if kind == "escalated":
        return f"to tier {d['to_tier'] + 1}" if isinstance(d.get("to_tier"), int) else ""
    if kind == "sla_breach":
        target = _TARGETS.get(d.get("which"), d.get("which"))
        return f"{target} target missed ({d.get('priority') or 'no priority'}, due {utc_text(d.get('due_at'))})"
    if kind == "resolved":
        return str(d.get("reason") or "")
    if kind == "policy_exhausted":
        return "every tier was paged and nobody acknowledged"
    if kind == "acknowledged":
        return ""
    return _cause_text(kind, d)


def _cause_text(kind: str, d: dict) -> str:
    """The words of causes and symptoms (`engine/causes.py`), of a resolution's wait (`engine/settle.py`)
    and of a person's mark on the page."""
    if kind == "held" and d.get("after_cause"):
        return (f"its cause, incident #{d['after_cause']}, resolved while it still fires: it pages at "
                f"{utc_text(d.get('until'))} unless it resolves first")
    if kind == "stands_alone":
        return (f"still firing {format_duration(float(d.get('cause_resolved_s') or 0))} after its cause, incident "
                f"#{d.get('cause')}, resolved: a fault of its own now")
    if kind == "held":
        causes = " or ".join(d.get("causes") or ["its cause"])
        return f"first page held until {utc_text(d.get('until'))}: waiting for {causes}"
    if kind == "joined":
        after = ", which had resolved: its aftermath" if d.get("aftermath") else ""
        return f"a symptom of incident #{d.get('cause')} ({d.get('cause_title')}){after}: nobody paged for it"
    if kind == "also_firing":
        after = " (after this one resolved: its aftermath)" if d.get("aftermath") else ""
        return f"also firing: incident #{d.get('incident')} {d.get('title')}{after}"
    if kind == "resolving":
        return f"its alerts resolved: it resolves at {utc_text(d.get('until'))} unless they fire again"
    if kind == "steady":
        return "fired again while its resolution waited: still open, nobody paged"
    if kind == "marked":
        return str(d.get("verdict", "")).replace("_", " ") + (f": {d['reason']}" if d.get("reason") else "")
    return ", ".join(f"{key}={value}" for key, value in d.items() if value is not None)


def window_text(d: dict) -> str:
    """The maintenance window of a `page_held` / `escalation_paused` event, with its reason."""
    return f"{d.get('reason')} window {d.get('window')}" + (f" ({d['why']})" if d.get("why") else "")
