"""The ha profile's Prometheus replicas: the single profile's `prometheus.yml` (same jobs, same rules),
with every replica of every component as targets, a `prometheus_replica` external label of its own, all
Alertmanager peers to alert, and remote write to VictoriaMetrics.

Both replicas scrape the same targets and evaluate the same rules, so both send every alert: the
replica label is dropped from alerts (`alert_relabel_configs`) so Alertmanager receives identical label
sets and keeps one alert, and from the remote-written samples (`write_relabel_configs`, applied after
the external labels) so VictoriaMetrics stores one series, its `-dedup.minScrapeInterval` keeping one
sample per scrape interval of the two.
"""

from __future__ import annotations

from vigil.stack.settings import StackSettings
from vigil.stack.config.ha import PROMETHEUS_REPLICAS, REPLICA_LABEL, HaTopology, replica_name
from vigil.stack.config.layout import RunLayout
from vigil.stack.config.prometheus import prometheus_config

DROP_REPLICA = {"action": "labeldrop", "regex": REPLICA_LABEL}
REMOTE_WRITE_DEADLINE = "1s"  # a batch leaves within a second: VictoriaMetrics is as fresh as Prometheus


def replicated_jobs(topology: HaTopology) -> dict[str, list[int]]:
    """Scrape job → the ports of all its replicas (the single profile's job scrapes replica 1 only)."""
    return {"prometheus": topology.prometheus_ports(), "alertmanager": topology.alertmanager_ports(),
            "vigil-notifier": topology.notifier_ports()}


def ha_prometheus_config(settings: StackSettings, layout: RunLayout, node_names: list[str], replica: int) -> dict:
    """`prometheus.yml` of replica `replica` (1-based)."""
    if not 1 <= replica <= PROMETHEUS_REPLICAS:
        raise ValueError(f"replica must be 1 … {PROMETHEUS_REPLICAS}, not {replica}")
    topology = HaTopology(settings)
    doc = prometheus_config(settings, layout, node_names)  # a fresh document: changed in place
    doc["global"]["external_labels"][REPLICA_LABEL] = replica_name("prometheus", replica)
    jobs = replicated_jobs(topology)
    for job in doc["scrape_configs"]:
        if job["job_name"] in jobs:
            job["static_configs"] = [{"targets": [topology.address(p) for p in jobs[job["job_name"]]]}]
    doc["scrape_configs"].append({"job_name": "victoria-metrics", "static_configs": [
        {"targets": [topology.address(topology.victoria_metrics_port)]}]})
    doc["alerting"] = {
        "alert_relabel_configs": [DROP_REPLICA],
        "alertmanagers": [{"static_configs": [{"targets": [topology.address(p) for p in topology.alertmanager_ports()]}]}],
    }
    doc["remote_write"] = [{"url": topology.remote_write_url, "name": "victoria-metrics",
                            "write_relabel_configs": [DROP_REPLICA],
                            "queue_config": {"batch_send_deadline": REMOTE_WRITE_DEADLINE}}]
    return doc
