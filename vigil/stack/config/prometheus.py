"""The stack's `prometheus.yml`, built as data: one scrape job per component, one target per GPU node."""

from __future__ import annotations

import socket

from vigil.common.durations import format_duration
from vigil.common.hostport import format_host_port

from vigil.stack.settings import StackSettings
from vigil.stack.config.layout import RunLayout

GPU_JOB = "vigil-gpu"


NODE_HEALTH_JOB = "vigil-node-health"
NODE_EXPORTER_JOB = "node-exporter"


def node_target(host: str, port: int, node: str | None = None) -> dict:
    """One static target; a `node` label lets node-keyed rules join it (and a node down mute its alerts)."""
    target: dict = {"targets": [format_host_port(host, port)]}
    if node is not None:
        target["labels"] = {"node": node}
    return target


def exporter_job(name: str, targets: list[dict]) -> dict:
    """A scrape job of vigil's own exporters, which label every series with node/gpu: keep theirs."""
    return {"job_name": name, "honor_labels": True, "static_configs": targets}


def gpu_targets(settings: StackSettings, node_names: list[str]) -> list[dict]:
    """One static target per GPU node so each has its own `instance` and `node` labels."""
    return [node_target(settings.host, settings.ports.gpu_node(i), name) for i, name in enumerate(node_names, start=1)]


def prometheus_config(settings: StackSettings, layout: RunLayout, node_names: list[str]) -> dict:
    ports = settings.ports

    def job(name: str, port: int, node: str | None = None) -> dict:
        return {"job_name": name, "static_configs": [node_target(settings.host, port, node)]}

    # node_exporter reads this machine's own /proc and filesystems: its `node` label is this host's name
    # (with real GPUs that is also the GPU node's), never a simulated node's, so the host's disks are not
    # paged as node-1's. The node health exporter's SMART data is the first GPU node's (simulated with the
    # fleet), so it carries that node's label and a node down mutes its alerts.
    host_node = node_names[0]
    scrape = [
        job("prometheus", ports.prometheus),
        job("alertmanager", ports.alertmanager),
        job(NODE_EXPORTER_JOB, ports.node_exporter, node=socket.gethostname()),
        job("vigil-notifier", ports.notifier),
        exporter_job(GPU_JOB, gpu_targets(settings, node_names)),
    ]
    if settings.node_health:
        scrape.append(exporter_job(NODE_HEALTH_JOB, [node_target(settings.host, ports.node_health, host_node)]))
    if settings.aiops:
        scrape.append(exporter_job("vigil-aiops", [node_target(settings.host, ports.aiops)]))
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
