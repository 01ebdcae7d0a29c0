"""The stack's `prometheus.yml`, built as data: one scrape job per component, one target per GPU node."""

from __future__ import annotations

from vigil.common.durations import format_duration
from vigil.common.hostport import format_host_port

from ..settings import StackSettings
from .layout import RunLayout

GPU_JOB = "vigil-gpu"


def gpu_targets(settings: StackSettings, node_names: list[str]) -> list[dict]:
    """One static target per GPU node so each has its own `instance` and `node` labels."""
    return [
        {"targets": [format_host_port(settings.host, settings.ports.gpu_node(i))], "labels": {"node": name}}
        for i, name in enumerate(node_names, start=1)
    ]


def prometheus_config(settings: StackSettings, layout: RunLayout, node_names: list[str]) -> dict:
    ports = settings.ports

    def job(name: str, port: int, honor_labels: bool = False, node: str | None = None) -> dict:
        cfg: dict = {"job_name": name}
        if honor_labels:  # our exporters already label every series with node/gpu; keep theirs
            cfg["honor_labels"] = True
        target: dict = {"targets": [format_host_port(settings.host, port)]}
        if node is not None:
            target["labels"] = {"node": node}
        cfg["static_configs"] = [target]
        return cfg

    # node_exporter and the node health exporter run on this host, which plays the first node: their
    # targets carry its `node` label, so node-keyed rules join them and a node down mutes its alerts
    host_node = node_names[0]
    scrape = [
        job("prometheus", ports.prometheus),
        job("alertmanager", ports.alertmanager),
        job("node-exporter", ports.node_exporter, node=host_node),
        job("vigil-notifier", ports.notifier),
        {"job_name": GPU_JOB, "honor_labels": True, "static_configs": gpu_targets(settings, node_names)},
    ]
    if settings.node_health:
        scrape.append(job("vigil-node-health", ports.node_health, honor_labels=True, node=host_node))
    if settings.aiops:
        scrape.append(job("vigil-aiops", ports.aiops, honor_labels=True))
    return {
        "global": {
            "scrape_interval": format_duration(settings.scrape_interval),
            "scrape_timeout": format_duration(max(0.5, settings.scrape_interval * 0.8)),
            "evaluation_interval": format_duration(settings.evaluation_interval),
            "external_labels": {"stack": "vigil-local"},
        },
        "alerting": {"alertmanagers": [{"static_configs": [{"targets": [format_host_port(settings.host, ports.alertmanager)]}]}]},
        "rule_files": [str(layout.rules_dir / "*.yml")],
        "scrape_configs": scrape,
    }
