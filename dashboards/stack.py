"""The monitoring stack's own health: is every target scraped and how long do scrapes take, do the rule
groups evaluate in time, how long the GPU exporters take to collect, does the notifier take in alerts and
empty its outbox, and is the Watchdog (the always-firing alert that proves the pipeline) alive."""

from __future__ import annotations

from grafana_foundation_sdk.builders.dashboard import Row

from .panels import COUNT, PER_SECOND, SECONDS, dashboard, graph, single

UID = "vigil-stack"


def build():
    board = dashboard(UID, "vigil / Stack health", "Prometheus scrapes and rule evaluation, the exporters' "
                      "collection time, the notifier's ingest and outbox, and the Watchdog.", ("stack",))
    board = (board.with_row(Row("Pipeline"))
             .with_panel(single("Watchdog", 'count(ALERTS{alertname="Watchdog", alertstate="firing"}) or vector(0)',
                                COUNT, "1 while the Watchdog fires, as it always should: 0 means the rules or "
                                "the alerting pipeline stopped.", width=6, thresholds=((None, "red"), (1, "green"))))
             .with_panel(single("Targets down", "count(up == 0) or vector(0)", COUNT,
                                "Scrape targets Prometheus cannot reach.", width=6,
                                thresholds=((None, "green"), (1, "red"))))
             .with_panel(single("Incidents firing", "sum(vigil_notifier_incidents_firing)", COUNT,
                                "Incidents the notifier holds open.", width=6))
             .with_panel(single("Series in the head block", "sum(prometheus_tsdb_head_series)", COUNT,
                                "Active series in Prometheus: the cost of the fleet's labels.", width=6)))
    board = (board.with_row(Row("Prometheus"))
             .with_panel(graph("Scrape duration by job", "max by (job) (scrape_duration_seconds)", SECONDS,
                               "The slowest scrape of each job: near the scrape timeout, samples go missing."))
             .with_panel(graph("Targets up by job", "sum by (job) (up)", COUNT, "Scrape targets up, by job."))
             .with_panel(graph("Rule group evaluation time",
                               "max by (rule_group) (prometheus_rule_group_last_duration_seconds)", SECONDS,
                               "How long each group's last evaluation took, against its interval.", width=8))
             .with_panel(graph("Rule evaluation failures and missed iterations", [
                 ("sum by (rule_group) (rate(prometheus_rule_evaluation_failures_total[$__rate_interval]))",
                  "failures {{rule_group}}"),
                 ("sum by (rule_group) (rate(prometheus_rule_group_iterations_missed_total[$__rate_interval]))",
                  "missed {{rule_group}}")], PER_SECOND,
                 "Any value here means alerts are late or wrong.", width=8))
             .with_panel(graph("Exporter collection time", "max by (node) (vigil_exporter_collection_duration_seconds)",
                               SECONDS, "How long each node's GPU exporter takes to read its GPUs.", width=8)))
    return (board.with_row(Row("Notifier"))
            .with_panel(graph("Alert ingest", "sum by (status) (rate(vigil_notifier_webhook_received_total"
                              "[$__rate_interval]))", PER_SECOND,
                              "Alertmanager webhook posts the notifier takes in, by status.", width=8))
            .with_panel(graph("Outbox", "sum by (state) (vigil_notifier_outbox_deliveries)", COUNT,
                              "Page deliveries by state: a growing pending count is outbox lag.", width=8))
            .with_panel(graph("Page delivery latency (p95)", "histogram_quantile(0.95, sum by (le, channel) ("
                              "rate(vigil_notifier_delivery_latency_seconds_bucket[$__rate_interval])))", SECONDS,
                              "From the page entering the outbox to the channel accepting it.", width=8,
                              empty="no page sent in the time range")))
