"""The pages the on-call engine sends, made for the caller to enqueue (`Outbox.enqueue_pages`, in its
transaction): a tier's people by their contact plans (`vigil.oncall.plan.contact_plan`), or every
(person, contact) already paged (updates, resolved).

Each page has a `page_key` naming the step it belongs to, so the same page is never enqueued twice,
whichever notifier gets there. The text comes from the incident's latest notification (`core/page_text.py`),
with the signed one-click links (`vigil.notifier.links`) on firing pages.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Callable

import sqlalchemy as sa

from vigil.notifier.core.deliveries import NewDelivery
from vigil.notifier.core.page_text import NO_CONTEXT, PageContext, compose_incident_page
from vigil.notifier.engine.causes import joined_symptoms
from vigil.notifier.engine.recurrence import recurrence
from vigil.notifier.core.escalation_steps import Escalation, PagedContact
from vigil.notifier.links import page_links
from vigil.notifier.store.notifications import latest_payload
from vigil.oncall.model import OncallConfig
from vigil.oncall.plan import contact_plan, is_ticket

# (incident id, now, person) -> the one-click URLs of a page to that person (none: pages without links)
LinkMaker = Callable[..., list[str]]


@dataclass(frozen=True)
class PageLinks:
    """What the notifier's pages link to: the signed one-click links (`vigil.notifier.links`, valid
    `ttl_s`) and, with `grafana_url`, the dashboard of what broke."""

    settings: object
    ttl_s: float
    grafana_url: str | None = None

    def __call__(self, incident_id: int, now: float, person: str | None = None) -> list[str]:
        return page_links(self.settings, incident_id, now, self.ttl_s, person)


def page_links_for(settings, oncall: OncallConfig) -> PageLinks:
    """The links of the notifier's pages: one-click links valid `incidents.link_ttl`, and the dashboards
    of `settings.grafana_url`."""
    return PageLinks(settings, float(oncall.incidents.link_ttl), settings.grafana_url)


def page_texts(conn: sa.Connection, incident, page_status: str, now: float, people: list[str | None],
               links: LinkMaker | None = None, note: str | None = None, why: str | None = None) -> dict:
    """What a page of `incident` (its row) says now to each of `people`: one reading of the incident, each
    person's own links (acting on one is recorded as theirs); `why`: why it was escalated to them."""
    grafana = links.grafana_url if isinstance(links, PageLinks) else None
    payload = latest_payload(conn, incident.id)
    context = NO_CONTEXT
    if page_status == "firing":
        came_back = recurrence(conn, incident.id, payload, incident.opened_at)
        context = PageContext(came_back.text() if came_back is not None else None, joined_symptoms(conn, incident.id))
    linked = links is not None and page_status == "firing"
    return {person: compose_incident_page(payload, page_status, incident.id, incident.title,
                                          links(incident.id, now, person) if linked else [], note, incident.priority,
                                          why, grafana, context)
            for person in dict.fromkeys(people)}


def tier_pages(conn: sa.Connection, oncall: OncallConfig, incident, escalation: Escalation, people: list[str],
               now: float, links: LinkMaker | None = None, page_status: str = "firing",
               why: str | None = None) -> list[NewDelivery]:
    """Tier `escalation.tier`'s pages to `people`, each by their contact plan (SMS and phone get the short
    form); `why`: why the escalation reached this tier."""
    texts = page_texts(conn, incident, page_status, now, people, links, why=why)
    labels = json.loads(incident.labels)
    severity, ticket = labels.get("severity"), is_ticket(labels)
    step = f"{incident.id}:{escalation.round}:{escalation.tier}:{escalation.repeat}:{escalation.due_at!r}"
    if page_status != "firing":
        step += f":{page_status}"
    return [NewDelivery(person, plan.contact_index, plan.kind, *texts[person].for_kind(plan.kind),
                        delay_s=max(0.0, plan.due_at - now), tier=escalation.tier, contact=plan.contact,
                        page_key=f"{step}:{person}:{plan.contact_index}")
            for person in people
            for plan in contact_plan(oncall, person, incident.priority or oncall.default_priority, severity, now,
                                     ticket)]


def contact_pages(conn: sa.Connection, incident, contacts: list[PagedContact], page_status: str, now: float,
                  step: str, links: LinkMaker | None = None, note: str | None = None) -> list[NewDelivery]:
    """A page, due now, to each of `contacts` (people already paged); `step` names the occasion in the
    page keys (`resolved:alertmanager:N`, `update:N` …)."""
    if not contacts:
        return []
    texts = page_texts(conn, incident, page_status, now, [c.person for c in contacts], links, note)
    return [NewDelivery(c.person, c.contact_index, c.kind, *texts[c.person].for_kind(c.kind), tier=c.tier,
                        contact=c.contact,
                        page_key=f"{incident.id}:{step}:{c.person}:{c.contact_index}") for c in contacts]

