"""Generate the files a local stack runs on: prometheus.yml, rule files, alertmanager.yml, the on-call
config and the webhook token. Everything is built as data and dumped with PyYAML (never text templates).
"""

from __future__ import annotations

import os
import secrets
from dataclasses import dataclass
from pathlib import Path

import yaml

import vigil.rules as rulegen

from .settings import StackSettings

GPU_JOB = "vigil-gpu"


def prom_duration(seconds: float) -> str:
    """Prometheus duration with a deterministic format ("1s", "1500ms", "4h")."""
    ms = int(round(seconds * 1000))
    for unit, size in (("h", 3_600_000), ("m", 60_000), ("s", 1000)):
        if ms % size == 0 and ms >= size:
            return f"{ms // size}{unit}"
    return f"{ms}ms"


@dataclass(frozen=True)
class RunLayout:
    """Where each generated file and data directory lives inside the run directory."""

    root: Path

    @property
    def state_file(self) -> Path:
        return self.root / "state.json"

    @property
    def token_file(self) -> Path:
        return self.root / "secrets" / "webhook-token"

    @property
    def prometheus_config(self) -> Path:
        return self.root / "prometheus" / "prometheus.yml"

    @property
    def rules_dir(self) -> Path:
        return self.root / "prometheus" / "rules"

    @property
    def prometheus_data(self) -> Path:
        return self.root / "prometheus" / "data"

    @property
    def alertmanager_config(self) -> Path:
        return self.root / "alertmanager" / "alertmanager.yml"

    @property
    def alertmanager_data(self) -> Path:
        return self.root / "alertmanager" / "data"

    @property
    def oncall_config(self) -> Path:
        return self.root / "oncall.yaml"

    @property
    def notifier_db(self) -> Path:
        return self.root / "notifier.db"

    @property
    def aiops_dir(self) -> Path:
        return self.root / "aiops"

    @property
    def logs_dir(self) -> Path:
        return self.root / "logs"

    @property
    def lock_file(self) -> Path:
        return self.root / "supervisor.lock"


def ensure_token(layout: RunLayout) -> str:
    """Return the webhook bearer token, generating it (mode 0600) on first use."""
    layout.token_file.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    if layout.token_file.exists():
        token = layout.token_file.read_text().strip()
        if token:
            return token
    token = secrets.token_urlsafe(32)
    fd = os.open(layout.token_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(token + "\n")
    return token


def gpu_targets(settings: StackSettings, node_names: list[str]) -> list[dict]:
    """One static target per GPU node so each has its own `instance` and `node` labels."""
    return [
        {"targets": [f"127.0.0.1:{settings.ports.gpu_node(i)}"], "labels": {"node": name}}
        for i, name in enumerate(node_names, start=1)
    ]


def prometheus_config(settings: StackSettings, layout: RunLayout, node_names: list[str]) -> dict:
    ports = settings.ports
    interval = prom_duration(settings.scrape_interval)
    timeout = prom_duration(max(0.5, settings.scrape_interval * 0.8))

    def job(name: str, port: int, honor_labels: bool = False, **extra) -> dict:
        cfg = {"job_name": name, "static_configs": [{"targets": [f"127.0.0.1:{port}"]}]}
        if honor_labels:
            cfg["honor_labels"] = True
        cfg.update(extra)
        return cfg

    scrape = [
        job("prometheus", ports.prometheus),
        job("alertmanager", ports.alertmanager),
        job("node-exporter", ports.node_exporter),
        job("vigil-notifier", ports.notifier),
        # honor_labels: our exporters already label every series with node/gpu; keep theirs.
        {"job_name": GPU_JOB, "honor_labels": True, "static_configs": gpu_targets(settings, node_names)},
    ]
    if settings.node_health:
        scrape.append(job("vigil-node-health", ports.node_health, honor_labels=True))
    if settings.aiops:
        scrape.append(job("vigil-aiops", ports.aiops, honor_labels=True))
    return {
        "global": {
            "scrape_interval": interval,
            "scrape_timeout": timeout,
            "evaluation_interval": prom_duration(settings.evaluation_interval),
            "external_labels": {"stack": "vigil-local"},
        },
        "alerting": {"alertmanagers": [{"static_configs": [{"targets": [f"127.0.0.1:{ports.alertmanager}"]}]}]},
        "rule_files": [str(layout.rules_dir / "*.yml")],
        "scrape_configs": scrape,
    }


def alertmanager_config(settings: StackSettings, layout: RunLayout, inhibit_rules: list[dict]) -> dict:
    """Route by severity to the notifier's webhook; the bearer token is read from the 0600 token file."""
    webhook = {
        "url": f"http://127.0.0.1:{settings.ports.notifier}/api/v1/alerts/alertmanager",
        "send_resolved": True,
        "max_alerts": 0,
        "http_config": {"authorization": {"type": "Bearer", "credentials_file": str(layout.token_file)}},
    }
    receivers = [{"name": name, "webhook_configs": [dict(webhook)]} for name in ("page-critical", "page-warning", "page-info")]
    timing = {
        "group_wait": prom_duration(settings.group_wait) if settings.group_wait else "0s",
        "group_interval": prom_duration(settings.group_interval),
        "repeat_interval": prom_duration(settings.repeat_interval),
    }
    return {
        "route": {
            "receiver": "page-critical",
            "group_by": ["alertname", "node", "gpu"],
            **timing,
            "routes": [
                {"receiver": "page-critical", "matchers": ['severity="critical"']},
                {"receiver": "page-warning", "matchers": ['severity="warning"']},
                {"receiver": "page-info", "matchers": ['severity="info"']},
            ],
        },
        "receivers": receivers,
        "inhibit_rules": inhibit_rules,
    }


def demo_oncall_config() -> dict:
    """The demo's on-call: one DRI whose pages land in the notifier's local inbox."""
    return {
        "targets": {"demo-dri": {"name": "Demo DRI", "channels": [{"type": "inbox"}]}},
        "routes": [
            {"match": {"severity": "critical"}, "notify": "demo-dri"},
            {"match": {"severity": "warning"}, "notify": "demo-dri"},
        ],
        "default": "demo-dri",
    }


def _write_yaml(path: Path, doc: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(doc, sort_keys=False, default_flow_style=False, allow_unicode=True), encoding="utf-8")


def write_stack_files(settings: StackSettings, layout: RunLayout, node_names: list[str]) -> None:
    """Generate every config file of the stack into the run directory (idempotent)."""
    ensure_token(layout)
    ruleset = rulegen.load_specs(rulegen.default_spec_paths())
    layout.rules_dir.mkdir(parents=True, exist_ok=True)
    for stale in layout.rules_dir.glob("*.yml"):
        stale.unlink()
    rule_doc = rulegen.prometheus_rule_file(ruleset, max_for_seconds=settings.max_for)
    (layout.rules_dir / "vigil-rules.yml").write_text(rulegen.dump_yaml(rule_doc), encoding="utf-8")
    _write_yaml(layout.prometheus_config, prometheus_config(settings, layout, node_names))
    _write_yaml(layout.alertmanager_config, alertmanager_config(settings, layout, rulegen.alertmanager_inhibit_rules(ruleset)))
    if settings.oncall_config is None:
        _write_yaml(layout.oncall_config, demo_oncall_config())
    for path in (layout.prometheus_data, layout.alertmanager_data, layout.logs_dir, layout.aiops_dir):
        path.mkdir(parents=True, exist_ok=True)
