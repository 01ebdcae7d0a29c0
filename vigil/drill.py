"""Fire drill: inject a fault into the simulated fleet and time every stage until the page and back.

Stages (each timed from the injection): the fault is seen in a scrape → the alert fires in Prometheus →
the notifier receives Alertmanager's notification → the page is delivered; then, after clearing: the
scrape shows recovery → the alert stops firing → the notifier receives the resolution → the resolved
page is delivered. Every check asks the real component's API.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

import requests

from .stack_client import RECENT_ROWS, StackClient, StackRequestError


@dataclass(frozen=True)
class FaultExpectation:
    alertname: str
    per_gpu: bool
    symptom: str  # PromQL template that returns a series while the fault is visible in scraped data


FAULTS: dict[str, FaultExpectation] = {
    "xid79": FaultExpectation("GpuFallenOffBus", True, 'vigil_gpu_up{{node="{node}",gpu="{gpu}"}} == 0'),
    "ecc-dbe": FaultExpectation("GpuUncorrectableEccErrors", True,
                                'vigil_gpu_ecc_errors_total{{node="{node}",gpu="{gpu}",error_type="uncorrected",counter_type="volatile"}} > 0'),
    "overheat": FaultExpectation("GpuOverheating", True, 'vigil_gpu_temperature_celsius{{node="{node}",gpu="{gpu}",sensor="gpu"}} >= 90'),
    "node-down": FaultExpectation("GpuNodeDown", False, 'up{{job="vigil-gpu",node="{node}"}} == 0'),
    # needs the AIOps service: the page comes from the learned baseline, not a fixed threshold
    "load-anomaly": FaultExpectation("GpuLoadOutsideBaseline", True,
                                     'vigil_gpu_utilization_ratio{{node="{node}",gpu="{gpu}"}} < 0.1'),
}


class DrillFailed(Exception):
    """A stage did not happen in time; the message names it and what to look at."""


@dataclass
class StageResult:
    name: str
    seconds: float


@dataclass
class Drill:
    apis: StackClient
    fault: str
    node: str
    gpu: int
    stage_timeout_s: float = 120.0
    poll_s: float = 0.25
    report: Callable[[StageResult], None] = lambda _r: None
    results: list[StageResult] = field(default_factory=list)

    def _chaos(self, path: str, body: dict) -> None:
        try:
            self.apis.chaos("POST", path, body)
        except StackRequestError as exc:
            raise DrillFailed(f"the simulator refused {path}: {exc}") from None

    def _labels_match(self, labels: dict) -> bool:
        expect = FAULTS[self.fault]
        if labels.get("alertname") != expect.alertname or labels.get("node") != self.node:
            return False
        return not expect.per_gpu or str(labels.get("gpu")) == str(self.gpu)

    def _wait(self, name: str, started: float, check: Callable[[], bool], hint: str) -> None:
        deadline = time.monotonic() + self.stage_timeout_s
        while True:
            try:
                if check():
                    break
            except requests.RequestException:
                pass  # a component restarting is not a drill failure until the timeout
            if time.monotonic() > deadline:
                raise DrillFailed(f"stage '{name}' did not happen within {self.stage_timeout_s:.0f}s ({hint})")
            time.sleep(self.poll_s)
        result = StageResult(name, time.monotonic() - started)
        self.results.append(result)
        self.report(result)

    def run(self) -> list[StageResult]:
        expect = FAULTS[self.fault]
        symptom = expect.symptom.format(node=self.node, gpu=self.gpu)
        alert_q = f'ALERTS{{alertname="{expect.alertname}",alertstate="firing",node="{self.node}"' + (
            f',gpu="{self.gpu}"}}' if expect.per_gpu else "}")
        seen_notifications = {n["id"] for n in self.apis.notifications()}
        seen_pages = {p["id"] for p in self.apis.pages(RECENT_ROWS)}

        def new_notification(status: str) -> bool:
            return any(n["id"] not in seen_notifications and n["status"] == status
                       and any(self._labels_match(a["labels"]) and a["status"] == status for a in n["alerts"])
                       for n in self.apis.notifications())

        def new_page(status: str) -> bool:
            return any(p["id"] not in seen_pages and p.get("status") == status and self._labels_match(p.get("labels", {}))
                       for p in self.apis.pages(RECENT_ROWS))

        body = {"fault": self.fault, "node": self.node, "gpu": self.gpu}
        cleared = False
        t0 = time.monotonic()
        self._chaos("/chaos/inject", body)
        try:
            self._wait("injected → seen in a scrape", t0, lambda: bool(self.apis.query(symptom)), f"query {symptom}")
            self._wait("alert firing in Prometheus", t0, lambda: bool(self.apis.query(alert_q)), f"query {alert_q}")
            self._wait("received by the notifier", t0, lambda: new_notification("firing"), "Alertmanager → notifier webhook")
            self._wait("page delivered", t0, lambda: new_page("firing"), "notifier → inbox delivery")
            t1 = time.monotonic()
            self._chaos("/chaos/clear", {"node": self.node})
            cleared = True
            self._wait("cleared → recovery seen in a scrape", t1, lambda: not self.apis.query(symptom), f"query {symptom}")
            self._wait("alert resolved in Prometheus", t1, lambda: not self.apis.query(alert_q), f"query {alert_q}")
            self._wait("resolution received by the notifier", t1, lambda: new_notification("resolved"), "Alertmanager → notifier")
            self._wait("resolved page delivered", t1, lambda: new_page("resolved"), "notifier → inbox delivery")
        finally:
            if not cleared:
                try:
                    self._chaos("/chaos/clear", {"node": self.node})
                except (DrillFailed, requests.RequestException):
                    pass
        return self.results
