"""On-call health as Prometheus metrics on the notifier's `/metrics`, over a trailing window.

Read from the store at scrape time (every notifier on one database shows the same figures) and
computed by `health.py`, the code behind `vigil report oncall`: the metrics and the report agree.
Gauges, not counters: each is a figure over the incidents opened in the last `window_s` (7 days by
default, `vigil_oncall_window_seconds`). A figure over nothing (no acknowledged incident: no MTTA) is
left out rather than shown as 0; a count is 0 (a team member nobody paged). `SPECS` is their
declaration; `docs/metrics.md` is generated from it.
The figures are worked out at most once per `refresh_s` (60 s) of real time: several Prometheus servers
scraping, or a scrape retried, read the last ones again instead of the store.
"""

from __future__ import annotations

import threading
import time

from prometheus_client.core import GaugeMetricFamily

from vigil.exporters.spec import MetricSpec
from vigil.notifier.analytics.health import grouped, judge, summary, working_hours_of
from vigil.notifier.analytics.queries import incidents_opened
from vigil.notifier.core.clock import Clock
from vigil.oncall.model import OncallConfig

WINDOW_S = 7 * 86400.0
REFRESH_S = 60.0
_SOURCE = "notifier store (incidents opened in the window)"
_TP = ("team", "priority")


def _spec(name: str, unit: str, labels: tuple[str, ...], help_text: str) -> MetricSpec:
    return MetricSpec(name, "gauge", unit, labels, help_text, _SOURCE)


SPECS = [
    _spec("vigil_oncall_window_seconds", "seconds", (), "The trailing window the vigil_oncall_* figures cover."),
    _spec("vigil_oncall_incidents", "", _TP, "Incidents opened in the window (team and priority \"none\" when unrouted)."),
    _spec("vigil_oncall_mtta_seconds", "seconds", _TP,
          "Mean time from an incident's opening to its first acknowledgement by a person (acknowledged incidents)."),
    _spec("vigil_oncall_mttr_seconds", "seconds", _TP, "Mean time from opening to resolution (resolved incidents)."),
    _spec("vigil_oncall_escalation_ratio", "ratio", _TP,
          "Share of incidents that paged a tier after the first, or that a person escalated."),
    _spec("vigil_oncall_sla_compliance_ratio", "ratio", (*_TP, "target"),
          "Met / (met + breached) of the ack or resolve target; pending incidents are left out."),
    _spec("vigil_oncall_acknowledged_ratio", "ratio", _TP, "Share of paged incidents a person acknowledged."),
    _spec("vigil_oncall_acted_on_ratio", "ratio", _TP,
          "Share of paged incidents a person acknowledged and also noted, resolved by hand or escalated."),
    _spec("vigil_oncall_pages", "", ("team", "person", "channel", "outside_hours"),
          "Firing pages sent to a person in the window, by contact kind; outside_hours=\"true\" when sent "
          "outside the person's working hours in their time zone. Every team member reads 0 for each of their "
          "contact kinds until paged."),
]
_HELP = {spec.name: spec.help for spec in SPECS}


def _family(name: str, labels: tuple[str, ...] = ()) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, _HELP[name], labels=list(labels))


class OncallHealthCollector:
    """`collect()` yields the `SPECS` families, computed from the store over the last `window_s`."""

    def __init__(self, store, oncall: OncallConfig, clock: Clock, window_s: float = WINDOW_S,
                 refresh_s: float = REFRESH_S):
        self._store, self._oncall, self._clock, self._window_s, self._refresh_s = store, oncall, clock, window_s, refresh_s
        self._lock = threading.Lock()
        self._last: tuple[float, list] | None = None  # (time.monotonic() it was worked out, the families)

    def collect(self):
        with self._lock:
            if self._last is None or time.monotonic() - self._last[0] >= self._refresh_s:
                self._last = (time.monotonic(), list(self._families()))
            yield from self._last[1]

    def _families(self):
        now = self._clock()
        working = working_hours_of(self._oncall)  # its cache of working hours lives for one pass
        judged = [judge(f, working) for f in incidents_opened(self._store.engine, now - self._window_s, now)]
        window = _family("vigil_oncall_window_seconds")
        window.add_metric([], self._window_s)
        yield window
        families = {name: _family(name, _TP) for name in (
            "vigil_oncall_incidents", "vigil_oncall_mtta_seconds", "vigil_oncall_mttr_seconds",
            "vigil_oncall_escalation_ratio", "vigil_oncall_acknowledged_ratio", "vigil_oncall_acted_on_ratio")}
        sla = _family("vigil_oncall_sla_compliance_ratio", (*_TP, "target"))
        for (team, priority), group in grouped(judged, lambda j: (j.team, j.priority)).items():
            figures, labels = summary(group), [team, priority]
            for name, value in (("vigil_oncall_incidents", figures["incidents"]),
                                ("vigil_oncall_mtta_seconds", figures["mtta_seconds"]),
                                ("vigil_oncall_mttr_seconds", figures["mttr_seconds"]),
                                ("vigil_oncall_escalation_ratio", figures["escalation_rate"]),
                                ("vigil_oncall_acknowledged_ratio", figures["acknowledged_share"]),
                                ("vigil_oncall_acted_on_ratio", figures["acted_on_share"])):
                if value is not None:
                    families[name].add_metric(labels, value)
            for target, counts in figures["sla"].items():
                if counts["compliance"] is not None:
                    sla.add_metric([*labels, target], counts["compliance"])
        yield from families.values()
        yield sla
        yield self._pages(judged)

    def _pages(self, judged) -> GaugeMetricFamily:
        """Every member of a team at 0 for each of their contact kinds (within working hours), so the
        pages per person read 0 for whoever was not paged rather than leaving them out; then the pages sent."""
        people = self._oncall.people  # a team's members are people of the file (the model checks it)
        counts: dict[tuple[str, str, str, str], int] = {
            (team_key, member, contact.kind, "false"): 0
            for team_key, team in self._oncall.teams.items() for member in team.members
            for contact in people[member].contacts.values()}
        for j in judged:
            for page, outside in zip(j.facts.pages, j.outside_hours):
                key = (j.team, page.person, page.channel, "true" if outside else "false")
                counts[key] = counts.get(key, 0) + 1
        family = _family("vigil_oncall_pages", ("team", "person", "channel", "outside_hours"))
        for key, count in sorted(counts.items()):
            family.add_metric(list(key), count)
        return family
