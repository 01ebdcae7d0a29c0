"""Postmortems as Markdown, HTML or PDF from Jinja2 templates a team can override.

`render_postmortem(incident, others, fmt=...)` is the one entry point (the CLI and the console use it):
it gathers the facts from the incident (an `incident_detail` dict), the metric evidence from Prometheus
when a client is given, draws the charts and renders `postmortem.md.j2` or `postmortem.html.j2` (PDF:
the HTML through weasyprint). Templates are looked up first in `templates` (a team's folder), then
in the package's `templates/`: a team's file of the same name replaces the package's, and a team's
template can `{% extends "base/postmortem.html.j2" %}` (always the package's) to change a block only.
"""

from __future__ import annotations

import base64
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import jinja2

from vigil.common.durations import format_duration
from vigil.common.prometheus_api import PrometheusClient
from vigil.common.times import rfc3339, utc_text

from . import charts, evidence
from .analysis import Analysis, analyse
from .facts import Facts, incident_facts
from .history import Job, gather_history

CONTENT_TYPES = {"md": "text/markdown; charset=utf-8", "html": "text/html; charset=utf-8", "pdf": "application/pdf"}
PACKAGE_TEMPLATES = Path(__file__).parent / "templates"


class TemplateProblem(ValueError):
    """A template that cannot be rendered (a team's, usually), said as `file:line: what` where known."""


@dataclass
class Postmortem:
    facts: Facts
    evidence: evidence.Evidence | None
    generated_at: float
    analysis: Analysis | None = None


def when(seconds: float | None) -> str:
    if seconds is None:
        return "unknown"
    try:
        return datetime.fromtimestamp(seconds, tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
    except (OverflowError, ValueError, OSError):  # a time an older version stored past year 9999
        return utc_text(rfc3339(seconds))


def clock(seconds: float | None) -> str:
    return "-" if seconds is None else datetime.fromtimestamp(seconds, tz=timezone.utc).strftime("%H:%M:%S")


def duration(seconds: float | None) -> str:
    return "unknown" if seconds is None else format_duration(round(seconds))


def md_cell(text: object) -> str:
    """A value fit for one Markdown table cell (no pipes or line breaks)."""
    return str(text).replace("|", "\\|").replace("\n", " ")


def environment(templates: Path | None = None) -> jinja2.Environment:
    """Templates from `templates` first, then the package's; `base/NAME` always names the package's."""
    package = jinja2.FileSystemLoader(PACKAGE_TEMPLATES)
    loaders = ([jinja2.FileSystemLoader(templates)] if templates else []) + [package]
    env = jinja2.Environment(
        loader=jinja2.ChoiceLoader([*loaders, jinja2.PrefixLoader({"base": package})]),
        autoescape=jinja2.select_autoescape(["html.j2"]), undefined=jinja2.StrictUndefined,
        trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)
    env.filters.update(when=when, clock=clock, duration=duration, cell=md_cell)
    return env


def gather(incident: dict, others: list[dict], prometheus: PrometheusClient | None = None,
           now: float | None = None, stopped_at: float | None = None) -> Postmortem:
    """The facts of `incident`, with the metric evidence and charts when `prometheus` is given; with
    `stopped_at` (a stopped stack's) as they stood then: an incident still open is measured up to it."""
    generated_at = time.time() if now is None else now
    now = generated_at if stopped_at is None else stopped_at
    found = evidence.gather(prometheus, incident, now) if prometheus is not None else None
    facts = incident_facts(incident, others, now, jobs_seen=found.jobs if found else (),
                           first_sign_at=found.first_sign_at if found else None,
                           first_sign_how=found.first_sign_how if found else "unknown: no Prometheus to ask")
    jobs, histories = [Job(job, _owner(incident, job), 0) for job in facts.jobs], []
    if found:
        marks = [("first sign", facts.first_sign_at, "tab:purple"), ("incident opened", facts.opened_at, "tab:orange"),
                 ("acknowledged", facts.acknowledged_at, "tab:blue"), ("resolved", facts.resolved_at, "tab:green")]
        for chart in found.charts:
            chart.png = charts.draw(chart, marks)
        facts.charts = found.charts
        jobs, histories, problems = gather_history(prometheus, facts.gpus, facts.jobs, evidence.window(incident, now),
                                                   facts.first_alert["at"], facts.first_sign_at)
        found.problems += [problem for problem in problems if problem not in found.problems]  # said once
    facts.stopped_at = stopped_at
    return Postmortem(facts, found, generated_at, analyse(facts, jobs, histories))


def _owner(incident: dict, job_id: str) -> str:
    """A job's owner as its alerts' labels say (tenant/user), when Prometheus is not asked."""
    for alert in incident.get("alerts") or [incident]:
        labels = alert.get("labels") or {}
        if labels.get("job_id") == job_id:
            return "/".join(p for p in (labels.get("tenant"), labels.get("user")) if p) or "unknown"
    return "unknown"


def render(postmortem: Postmortem, fmt: str = "md", templates: Path | None = None,
           chart_urls: list[str] | None = None) -> bytes:
    """`postmortem` as `fmt` (md, html or pdf). Charts are embedded as data URLs unless `chart_urls`
    names where the caller wrote each one's PNG (Markdown next to its images)."""
    if fmt not in CONTENT_TYPES:
        raise ValueError(f"unknown postmortem format {fmt!r}; expected one of {', '.join(CONTENT_TYPES)}")
    f = postmortem.facts
    urls = chart_urls or ["data:image/png;base64," + base64.b64encode(c.png).decode() for c in f.charts]
    context = dict(f=f, a=postmortem.analysis or analyse(f, [], []), ev=postmortem.evidence,
                   charts=list(zip(f.charts, urls)), generated_at=postmortem.generated_at)
    name = "postmortem.md.j2" if fmt == "md" else "postmortem.html.j2"
    try:
        text = environment(templates).get_template(name).render(**context)
    except jinja2.TemplateSyntaxError as exc:
        raise TemplateProblem(f"{exc.filename or name}:{exc.lineno}: {exc.message}") from None
    except jinja2.TemplateError as exc:
        raise TemplateProblem(f"{name}: {exc}") from None
    if fmt != "pdf":
        return text.encode()
    import weasyprint

    return weasyprint.HTML(string=text).write_pdf()


def render_postmortem(incident: dict, others: list[dict], fmt: str = "md", prometheus: PrometheusClient | None = None,
                      now: float | None = None, templates: Path | None = None) -> tuple[bytes, str]:
    """The postmortem of `incident` (an `incident_detail` dict; `others`: incidents to search for related
    ones) as (bytes, content type) in `fmt`: md, html or pdf."""
    return render(gather(incident, others, prometheus, now), fmt, templates), CONTENT_TYPES[fmt]
