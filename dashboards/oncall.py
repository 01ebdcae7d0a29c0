"""Alerting and on-call: what fires now and how loud, the pages the notifier sent (by channel and result),
and the on-call team's KPIs over the notifier's trailing window (`vigil_oncall_*`, docs/oncall-health.md):
MTTA and MTTR, SLA compliance, escalation and acted-on ratios per team and priority. Firing alerts on a
node link to the node dashboard."""

from __future__ import annotations

from grafana_foundation_sdk.builders.dashboard import Row

from .panels import COUNT, NO_INCIDENT, PERCENT, SECONDS, dashboard, drill, graph, listing, single

UID = "vigil-oncall"
NODE_UID = "vigil-node"
FIRING = 'ALERTS{alertstate="firing"}'
BY_TEAM = "max by (team, priority)"
_TO_NODE = drill("Node ${__field.labels.node}", NODE_UID, ("node",))


def _kpi(title: str, metric: str, unit: str, description: str, legend: str = "{{team}} {{priority}}"):
    return graph(title, [(f"{BY_TEAM} ({metric})", legend)], unit, description, width=8, empty=NO_INCIDENT)


def build():
    board = dashboard(UID, "vigil / Alerting and on-call", "Alerts firing and the noisiest ones, the pages the "
                      "notifier sent, and the on-call KPIs: MTTA, MTTR, SLA compliance, escalation and acted-on "
                      "ratios by team and priority.", ("oncall",))
    board = (board.with_row(Row("Now"))
             .with_panel(single("Firing alerts by severity", f"sum by (severity) ({FIRING})", COUNT,
                                "Alerts firing in Prometheus now, by severity (the Watchdog always fires).", width=6))
             .with_panel(single("Incidents open", "sum(vigil_notifier_incidents_firing)", COUNT,
                                "Incidents the notifier holds open (firing).", width=6,
                                thresholds=((None, "green"), (1, "orange"))))
             .with_panel(single("Escalations waiting", "sum(vigil_notifier_escalations_pending)", COUNT,
                                "Incidents whose escalation waits for its next tier or for an ack to expire.",
                                width=6))
             .with_panel(single("Pages failing", 'sum(vigil_notifier_outbox_deliveries{state="failed"})', COUNT,
                                "Page deliveries that gave up: someone was not told.", width=6,
                                thresholds=((None, "green"), (1, "red")))))
    board = (board.with_row(Row("Alerts"))
             .with_panel(graph("Firing alerts by severity", f"sum by (severity) ({FIRING})", COUNT,
                               "Alerts firing over time, by severity.", stacked=True))
             .with_panel(listing("Noisiest alerts", f"topk(10, sum by (alertname) (count_over_time({FIRING}"
                                 "[$__range])))", COUNT,
                                 "The alerts that fired longest in the time range (firing series × samples).",
                                 width=6))
             .with_panel(listing("Firing alerts on nodes", f'sum by (alertname, severity, node) ({FIRING[:-1]}, '
                                 'node!=""})', COUNT, "Alerts firing on a node now; click one for the node.", width=6,
                                 links=[_TO_NODE], empty="none firing")))
    board = (board.with_row(Row("Pages"))
             .with_panel(graph("Pages sent by channel and result", "sum by (channel, result) (increase("
                               "vigil_notifier_deliveries_total[$__rate_interval]))", COUNT,
                               "Page delivery attempts by channel and result: failures mean retries or silence.",
                               width=8))
             .with_panel(graph("Pages per person in the window", "sum by (person, channel, outside_hours) "
                               "(vigil_oncall_pages)", COUNT, "Firing pages each person got in the notifier's "
                               "window, by channel; outside_hours=\"true\" is the on-call load that hurts.", width=8,
                               empty="nobody paged in the window"))
             .with_panel(graph("Escalation tiers paged", "sum by (tier) (increase(vigil_notifier_escalations_total"
                               "[$__rate_interval]))", COUNT, "Tiers paged (0 = first); later tiers mean nobody "
                               "acknowledged in time.", width=8)))
    return (board.with_row(Row("On-call KPIs (the notifier's trailing window)"))
            .with_panel(single("KPI window", "max(vigil_oncall_window_seconds)", SECONDS,
                               "The trailing window the KPIs below cover (incidents opened in it).", width=4))
            .with_panel(single("Incidents in the window", "sum(vigil_oncall_incidents) or vector(0)", COUNT,
                               "Incidents opened in the window, all teams.", width=4))
            .with_panel(graph("SLA breaches", "sum by (priority, target) (increase(vigil_notifier_sla_breaches_total"
                              "[$__rate_interval]))", COUNT,
                              "Incidents that missed their ack or resolve target, by priority.", width=16, height=4))
            .with_panel(_kpi("MTTA", "vigil_oncall_mtta_seconds", SECONDS,
                             "Mean time from an incident's opening to a person's first acknowledgement."))
            .with_panel(_kpi("MTTR", "vigil_oncall_mttr_seconds", SECONDS, "Mean time from opening to resolution."))
            .with_panel(graph("SLA compliance", [("max by (team, priority, target) (vigil_oncall_sla_compliance_ratio)",
                                                  "{{team}} {{priority}} {{target}}")], PERCENT,
                              "Met / (met + breached) of the ack and resolve targets.", width=8, minimum=0, maximum=1,
                              empty=NO_INCIDENT))
            .with_panel(_kpi("Escalation ratio", "vigil_oncall_escalation_ratio", PERCENT,
                             "Share of incidents that paged a later tier or that a person escalated."))
            .with_panel(_kpi("Acknowledged ratio", "vigil_oncall_acknowledged_ratio", PERCENT,
                             "Share of paged incidents a person acknowledged."))
            .with_panel(_kpi("Acted-on ratio", "vigil_oncall_acted_on_ratio", PERCENT,
                             "Share of paged incidents a person acknowledged and also noted, resolved or escalated: "
                             "a low ratio means pages nobody acts on (noise).")))
