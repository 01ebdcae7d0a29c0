"""Fire drill: inject a fault into the simulated fleet and time every stage until the page and back.

Stages (each timed from the injection): the fault is seen in a scrape → the alert fires in Prometheus →
the notifier receives Alertmanager's notification → the page is delivered; then, after clearing: the
scrape shows recovery → the alert stops firing → the notifier receives the resolution → the resolved
page is delivered. Every check asks the real component's API.

An alert that files a ticket (`notify: ticket`) wakes nobody: its page waits for the person's working
hours. Its drill checks what holds at any hour instead of a delivery: the ticket is filed (the incident
is open, its first tier's page queued, held or sent), and after clearing, the incident is resolved.

Nothing here repeats the rules or the simulator: the alert a fault must raise is the one whose spec
says `drill: FAULT` (the rules loader checks FAULT against the simulator's fault list); whether a fault
hits one GPU, a whole node or the job holding a GPU comes from the simulator; and "seen in a scrape"
means that the alert's own expression returns a series for the node (and GPU) — for a job fault, for
the job the simulator says it hung (its `job_id`) — on the data Prometheus scraped.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

import requests

import vigil.rules as rulegen
from vigil.common.prometheus_api import PrometheusUnavailable
from vigil.exporters.sim.faults import FAULTS, per_gpu, per_job
from vigil.common.times import parse_time, utc_text

from vigil.stack.client import StackClient, StackRequestError


@dataclass(frozen=True)
class FaultExpectation:
    """What a drill of `fault` waits for: `alertname` firing, on one GPU or (`per_gpu` False) a node, or
    (`per_job`) on the job that holds the GPU named."""

    fault: str
    alertname: str
    expr: str  # the alert's PromQL: returns a series for the node/GPU (job) while the fault shows in scraped data
    per_gpu: bool
    per_job: bool = False
    labels: tuple[tuple[str, str], ...] = ()  # the alert's static labels (severity, team, ...)
    ticket: bool = False  # the alert files a ticket: its page waits for working hours


def fault_expectations(ruleset: rulegen.RuleSet) -> dict[str, FaultExpectation]:
    """One expectation per fault that an alert of `ruleset` names in its `drill:` key, by fault name."""
    drilled = sorted((alert for alert in ruleset.alerts if alert.drill is not None), key=lambda alert: alert.drill)
    return {alert.drill: FaultExpectation(alert.drill, alert.name, alert.expr, per_gpu(alert.drill),
                                          per_job(alert.drill), (*alert.labels, ("severity", alert.severity)),
                                          ticket=alert.notify == "ticket")
            for alert in drilled}


def shipped_fault_expectations() -> dict[str, FaultExpectation]:
    """The drills of the shipped rule specs: the rules `vigil up` loads into Prometheus."""
    return fault_expectations(rulegen.load_specs(rulegen.default_spec_paths()))


# the labels that tell one alert of a rule from another in the simulated fleet (an alert's own label set
# may differ from its incident's common labels only by Prometheus' external labels)
IDENTITY = ("alertname", "node", "gpu", "job_id", "device", "slo")


class DrillFailed(Exception):
    """A stage did not happen in time; the message names it and what to look at."""


@dataclass
class StageResult:
    name: str
    seconds: float
    detail: str = ""  # who was paged through which channel and tier, who acknowledged


@dataclass
class Drill:
    apis: StackClient
    expect: FaultExpectation
    node: str
    gpu: int
    stage_timeout_s: float = 120.0
    poll_s: float = 0.25
    # acknowledge the page as its recipient would; False: wait for the next tier to be paged first
    acknowledge: bool = True
    report: Callable[[StageResult], None] = lambda _r: None
    results: list[StageResult] = field(default_factory=list)
    job_id: str | None = None  # a job fault's job, as the simulator named it when it accepted the fault
    # alerts pending or firing before the injection (their identity labels): never the drill's doing
    under_way: list[dict] = field(default_factory=list)

    def _chaos(self, path: str, body: dict) -> dict:
        try:
            return self.apis.chaos("POST", path, body)
        except StackRequestError as exc:
            raise DrillFailed(f"the simulator refused {path}: {exc}") from None

    def _on_target(self, labels: dict) -> bool:
        """Whether a series or an alert with `labels` is about the node (and GPU) — or the job — under drill."""
        if self.expect.per_job:
            return self.job_id is not None and labels.get("job_id") == self.job_id
        if labels.get("node") != self.node:
            return False
        return not self.expect.per_gpu or str(labels.get("gpu")) == str(self.gpu)

    def _labels_match(self, labels: dict) -> bool:
        return labels.get("alertname") == self.expect.alertname and self._on_target(labels)

    def _holding_window(self) -> dict | None:
        """An active maintenance window that would hold the drill's page: one whose every matcher the
        alert's labels known before it fires satisfy (a window on other labels cannot be told)."""
        known = {"alertname": self.expect.alertname, **dict(self.expect.labels)}
        if not self.expect.per_job:
            known["node"] = self.node
            if self.expect.per_gpu:
                known["gpu"] = str(self.gpu)
        return next((window for window in self.apis.maintenance() if window.get("active") and window.get("match")
                     and all(known.get(key) == value for key, value in window["match"].items())), None)

    def _shows(self, promql: str) -> bool:
        """Whether `promql` returns a series for the node (and GPU) under drill."""
        return any(self._on_target(labels) for labels, _ in self.apis.query(promql))

    def _wait(self, name: str, started: float, check: Callable[[], object], hint: str,
              describe: Callable[[object], str] = lambda _found: "") -> object:
        """Poll `check` until it returns something truthy; record the stage and return what it found."""
        deadline = time.monotonic() + self.stage_timeout_s
        while True:
            try:
                found = check()
                if found:
                    break
            except (requests.RequestException, PrometheusUnavailable):
                pass  # a component restarting is not a drill failure until the timeout
            if time.monotonic() > deadline:
                raise DrillFailed(f"stage '{name}' did not happen within {self.stage_timeout_s:.0f}s ({hint})")
            time.sleep(self.poll_s)
        result = StageResult(name, time.monotonic() - started, describe(found))
        self.results.append(result)
        self.report(result)
        return found

    def run(self) -> list[StageResult]:
        symptom = self.expect.expr
        alert_q = f'ALERTS{{alertname="{self.expect.alertname}",alertstate="firing"}}'
        where = f'node="{self.node}"' + (f', gpu="{self.gpu}"' if self.expect.per_gpu else "")
        seen_notifications = {n["id"] for n in self.apis.notifications()}
        started_at = time.time()  # pages queued since: the drill's (an incident reopened keeps its old ones)
        last_incident = max((i["id"] for i in self.apis.incidents(1)), default=0)

        def new_notification(status: str) -> dict | None:
            return next((n for n in self.apis.notifications() if n["id"] not in seen_notifications
                         and n["status"] == status
                         and any(self._labels_match(a["labels"]) and a["status"] == status for a in n["alerts"])), None)

        def filed(notification: dict) -> dict | None:
            """The ticket's first page, once queued (held until working hours, or sent)."""
            pages = [p for p in self.apis.incident(notification["incident_id"])["pages"] if p["status"] == "firing"]
            return {**pages[0], "incident_id": notification["incident_id"], "recipient": pages[0]["person"],
                    "channel": pages[0]["kind"]} if pages else None

        def describe_ticket(page: dict) -> str:
            held = f", held until {utc_text(page['due_at'])}" if page.get("due_at") else ", sent"
            return f"ticket: incident #{page['incident_id']} to {page['recipient']} via {page['channel']}{held}"

        def new_page(status: str, incident: int, tier_from: int = 0) -> dict | None:
            """The first page of `status` of `incident` (of tier index `tier_from` or later) queued since the
            drill began and delivered, by whichever channel: the local inbox or a real contact (the outbox
            says `sent`; `digested`: it reached the person inside a storm digest)."""
            return next(({**p, "incident_id": incident, "recipient": p["person"], "channel": p["kind"]}
                         for p in self.apis.incident(incident)["pages"]
                         if p["status"] == status and p["state"] in ("sent", "digested")
                         and (p.get("tier") or 0) >= tier_from and parse_time(p["created_at"]) >= started_at - 1),
                        None)

        def describe_page(page: dict) -> str:
            tier = f" (tier {page['tier'] + 1})" if isinstance(page.get("tier"), int) else ""
            return f"incident #{page.get('incident_id')} to {page.get('recipient')} via {page.get('channel')}{tier}"

        present = [f for f in self.apis.chaos("GET", "/chaos").get("faults", []) if f.get("node") == self.node]
        if present:
            listed = ", ".join(f"{f['fault']}" + ("" if f.get("gpu") is None else f" on GPU {f['gpu']}") for f in present)
            raise DrillFailed(f"{self.node} already has a fault ({listed}): the drill could not tell its own from it, "
                              f"and would clear it at the end. Clear it first (`vigil chaos clear --node {self.node}`) "
                              "or drill another node; nothing was injected")
        window = self._holding_window()
        if window is not None:
            name = f"maintenance window {window['id']}" if window.get("id") else "the on-call file's maintenance window"
            reason = f" ({window['reason']})" if window.get("reason") else ""
            matchers = ", ".join(f"{key}={value}" for key, value in window["match"].items())
            end = f"`vigil maintenance end {window['id']}`" if window.get("id") else "it (in the on-call file)"
            raise DrillFailed(f"{name}{reason} holds the pages of alerts matching {matchers} until "
                              f"{utc_text(window['ends_at'])}: the drill's page would be held, not sent. End {end} or "
                              "drill another node; nothing was injected")
        self.under_way = self._alerts_under_way()
        body = {"fault": self.expect.fault, "node": self.node, "gpu": self.gpu}
        cleared = False
        t0 = time.monotonic()
        injected = self._chaos("/chaos/inject", body).get("fault", {})
        if self.expect.per_job:
            self.job_id = injected.get("job_id")
            where = f'job_id="{self.job_id}"'
        try:
            self._wait("injected → seen in a scrape", t0, lambda: self._shows(symptom),
                       f"query {symptom} for {where}; {self.expect.fault}: {FAULTS[self.expect.fault]}",
                       lambda _found: f"job {self.job_id}" if self.expect.per_job else "")
            self._wait("alert firing in Prometheus", t0, lambda: self._shows(alert_q), f"query {alert_q} for {where}")
            received = self._wait("received by the notifier", t0, lambda: new_notification("firing"),
                                  "Alertmanager → notifier webhook")
            if self.expect.ticket:
                page = self._wait("ticket filed", t0, lambda: filed(received),
                                  "the incident's first-tier page (a ticket waits for working hours)", describe_ticket)
            else:
                page = self._wait("page delivered", t0, lambda: new_page("firing", received["incident_id"]),
                                  "notifier → the contact's channel (`vigil incidents show` lists each attempt)",
                                  describe_page)
            if not self.acknowledge and not self.expect.ticket:  # a ticket is never escalated
                after = (page.get("tier") or 0) + 1  # the next tier's index; people count tiers from 1
                page = self._wait(f"nobody acknowledged: tier {after + 1} paged", t0,
                                  lambda: new_page("firing", page["incident_id"], after),
                                  f"the escalation to tier {after + 1} (the policy's wait after tier {after})",
                                  describe_page)
            self._acknowledge(page, t0)
            t1 = time.monotonic()
            self._chaos("/chaos/clear", {"node": self.node})
            cleared = True
            self._wait("cleared → recovery seen in a scrape", t1, lambda: not self._shows(symptom), f"query {symptom} for {where}")
            self._wait("alert resolved in Prometheus", t1, lambda: not self._shows(alert_q), f"query {alert_q} for {where}")
            self._wait("resolution received by the notifier", t1, lambda: new_notification("resolved"), "Alertmanager → notifier")
            incident = page["incident_id"]
            if self.expect.ticket:
                self._wait("ticket resolved", t1, lambda: self.apis.incident(incident)["state"] == "resolved",
                           "the notifier's incident", lambda _found: f"incident #{incident}")
            else:
                self._wait("resolved page delivered", t1, lambda: new_page("resolved", incident),
                           "notifier → the contact's channel", describe_page)
            self._one_incident(incident, last_incident, t0)
        finally:
            if not cleared:
                try:
                    self._chaos("/chaos/clear", {"node": self.node})
                except (DrillFailed, requests.RequestException):
                    pass
        return self.results

    def _concerns_drill(self, labels: dict) -> bool:
        """Whether an incident with `labels` may be the drilled fault's doing: about its node (or job), or
        about no node at all (a fleet-wide SLO burn)."""
        if self.job_id is not None and labels.get("job_id") == self.job_id:
            return True
        return labels.get("node") in (None, self.node)

    def _alerts_under_way(self) -> list[dict]:
        """The identity of each alert pending or firing now, before the injection: a straggler pending
        for 15 minutes that fires during the drill was under way before it, so it is not the fault's."""
        try:
            return [{key: labels[key] for key in IDENTITY if key in labels}
                    for labels, _ in self.apis.query("ALERTS")]
        except (requests.RequestException, PrometheusUnavailable) as exc:
            raise DrillFailed(f"Prometheus did not list its alerts before the injection ({exc}); "
                              "nothing was injected") from None

    def _was_under_way(self, labels: dict) -> bool:
        """Whether an incident with common `labels` is of an alert already pending before the injection."""
        return any(all(labels.get(key) == value for key, value in before.items()) for before in self.under_way)

    def _one_incident(self, incident: int, last_incident: int, started: float) -> None:
        """One fault, one incident: every other incident opened since the injection about the drilled node
        (or job, or the whole fleet), of an alert not already pending before it, must have joined the
        drill's as a symptom (`part_of`)."""
        opened = [i for i in self.apis.incidents() if i["id"] > last_incident and i["id"] != incident
                  and self._concerns_drill(i.get("labels") or {})
                  and not self._was_under_way(i.get("labels") or {})]
        extra = [i for i in opened if i.get("part_of") is None]
        if extra:
            listed = "; ".join(f"#{i['id']} {i.get('labels', {}).get('alertname', i.get('title'))} "
                               f"({i.get('priority') or 'no priority'}, {i.get('state')})" for i in extra)
            raise DrillFailed(f"the fault opened {len(extra)} more incident(s) besides #{incident}: {listed}. "
                              "One fault should be one incident: declare each as a symptom of "
                              f"{self.expect.alertname} (`symptom_of` in its rule spec, docs/rules.md)")
        joined = [i.get("labels", {}).get("alertname", i.get("title")) for i in opened]
        result = StageResult("one incident", time.monotonic() - started,
                             f"#{incident}" + (f", joined by {', '.join(joined)}" if joined else ""))
        self.results.append(result)
        self.report(result)

    def _acknowledge(self, page: dict, started: float) -> None:
        """Acknowledge the paged incident as the person who got the page (escalation stops)."""
        who = page.get("recipient") or "drill"
        try:
            self.apis.incident_action(page["incident_id"], "ack", who)
        except StackRequestError as exc:
            raise DrillFailed(f"acknowledging incident #{page['incident_id']} was refused: {exc}") from None
        result = StageResult("acknowledged", time.monotonic() - started,
                             f"incident #{page['incident_id']} by {who}")
        self.results.append(result)
        self.report(result)
