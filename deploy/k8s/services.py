"""The central vigil services: the notifier (several replicas on one PostgreSQL) and the AIOps service,
each with its Service, ServiceMonitor and PodDisruptionBudget, and the Secrets they read."""

from __future__ import annotations

from pathlib import Path

import vigil.oncall
from vigil.rules.alertmanager import HEARTBEAT_PATH, WEBHOOK_PATH

from .aiops_memory import BASE_FLEET_GPUS, aiops_resources
from .meta import (IMAGE_USER, DeploySettings, container_port, http_probe, labels, metadata, obj,
                   placeholder_secret, pod_disruption_budget, resources, restricted_security, secret_env, selector,
                   service, service_account, spread)

NOTIFIER = "vigil-notifier"
AIOPS = "vigil-aiops"
ALERTMANAGER_SERVICE = "vigil-alertmanager"
PROMETHEUS_SERVICE = "vigil-prometheus"
TOKEN_SECRET = "vigil-webhook-token"
TOKEN_KEY = "token"
DB_SECRET = "vigil-notifier-db"
ONCALL_SECRET = "vigil-oncall"
ONCALL_KEY = "oncall.yaml"
NOTIFIER_CONFIG = "vigil-notifier"
# a complete, valid on-call file whose channel URLs are placeholders (`vigil oncall check` passes on it)
ONCALL_EXAMPLE = Path(vigil.oncall.__file__).parent / "examples" / "contacts.yaml"
AIOPS_MATCH = "vigil_gpu_utilization_ratio"
SERVICE_JOBS = {NOTIFIER: "vigil-notifier", AIOPS: "vigil-aiops"}


def notifier_webhook_url(settings: DeploySettings) -> str:
    return settings.service_url(NOTIFIER, settings.ports.notifier, WEBHOOK_PATH)


def notifier_heartbeat_url(settings: DeploySettings) -> str:
    return settings.service_url(NOTIFIER, settings.ports.notifier, HEARTBEAT_PATH)


def secrets(settings: DeploySettings) -> list[dict]:
    """The Secrets a user fills before the first `kubectl apply` (docs/deploy.md, Secrets to fill). The
    placeholders fail safe: the notifier refuses a 10-character token, `.invalid` never resolves."""
    token = placeholder_secret(settings, TOKEN_SECRET, NOTIFIER, {TOKEN_KEY: "REPLACE-ME"},
                               "the notifier's bearer token; Alertmanager sends it on every webhook")
    database = placeholder_secret(settings, DB_SECRET, NOTIFIER,
                                  {"url": "postgresql://vigil:REPLACE-ME@postgresql.example.invalid:5432/vigil"},
                                  "the notifier's PostgreSQL URL (every replica shares it)")
    oncall = placeholder_secret(settings, ONCALL_SECRET, NOTIFIER,
                                {ONCALL_KEY: ONCALL_EXAMPLE.read_text(encoding="utf-8")},
                                "your on-call file: people, schedules and channel URLs (docs/oncall.md)")
    return [token, database, oncall]


def _deployment(settings: DeploySettings, name: str, replicas: int, container: dict, volumes: list[dict],
                component: str | None = None, extra_labels: dict[str, str] | None = None) -> dict:
    """`name`'s Deployment; `component` (default: `name`) gives its labels and ServiceAccount, and
    `extra_labels` tell apart several Deployments of one component (the AIOps shards)."""
    component = component or name
    pod_selector = {**selector(component), **(extra_labels or {})}
    pod = {"serviceAccountName": component, "automountServiceAccountToken": False,
           "securityContext": {"fsGroup": IMAGE_USER}, "topologySpreadConstraints": spread(dict(pod_selector)),
           "containers": [container], "volumes": volumes}
    spec = {"replicas": replicas, "selector": {"matchLabels": pod_selector},
            "template": {"metadata": {"labels": {**labels(component), **(extra_labels or {})}}, "spec": pod}}
    meta = metadata(settings, name, component)
    meta["labels"].update(extra_labels or {})
    return obj("apps/v1", "Deployment", meta, spec=spec)


def notifier_args(settings: DeploySettings, prometheus_url: str) -> list[str]:
    """The notifier's command line; `prometheus_url` is where it queries (postmortem charts)."""
    return ["notifier", "serve", "--listen", f"0.0.0.0:{settings.ports.notifier}", "--db", "$(VIGIL_NOTIFIER_DB)",
            "--token-file", f"/etc/vigil/token/{TOKEN_KEY}", "--oncall-config", f"/etc/vigil/oncall/{ONCALL_KEY}",
            "--alertmanager-url", settings.service_url(ALERTMANAGER_SERVICE, settings.ports.alertmanager),
            "--prometheus-url", prometheus_url,
            "--public-url", "$(VIGIL_PUBLIC_URL)", "--heartbeat", "watchdog=5m,team=platform"]


def notifier(settings: DeploySettings) -> list[dict]:
    port = settings.ports.notifier
    container = {
        "name": "notifier", "image": settings.image(settings.services_image),
        "args": notifier_args(settings, settings.service_url(PROMETHEUS_SERVICE, settings.ports.prometheus)),
        "env": [secret_env("VIGIL_NOTIFIER_DB", DB_SECRET, "url"),
                {"name": "VIGIL_PUBLIC_URL", "valueFrom": {"configMapKeyRef": {"name": NOTIFIER_CONFIG,
                                                                               "key": "public-url"}}},
                # postmortem charts: matplotlib's cache on the writable /tmp (the root filesystem is read-only)
                {"name": "MPLCONFIGDIR", "value": "/tmp/matplotlib"}],
        "ports": [container_port("http", port)],
        "readinessProbe": http_probe("/healthz", "http", period=5),
        "livenessProbe": http_probe("/healthz", "http", period=20, initial=15),
        "resources": resources("250m", "256Mi", memory_limit="512Mi"),
        "securityContext": restricted_security(),
        "volumeMounts": [{"name": "token", "mountPath": "/etc/vigil/token", "readOnly": True},
                         {"name": "oncall", "mountPath": "/etc/vigil/oncall", "readOnly": True},
                         {"name": "tmp", "mountPath": "/tmp"}],
    }
    volumes = [{"name": "token", "secret": {"secretName": TOKEN_SECRET, "defaultMode": 0o440}},
               {"name": "oncall", "secret": {"secretName": ONCALL_SECRET, "defaultMode": 0o440}},
               {"name": "tmp", "emptyDir": {"sizeLimit": "256Mi"}}]
    config = obj("v1", "ConfigMap", metadata(settings, NOTIFIER_CONFIG, NOTIFIER),
                 data={"public-url": settings.service_url(NOTIFIER, port)})
    return [service_account(settings, NOTIFIER, NOTIFIER), config,
            _deployment(settings, NOTIFIER, 2, container, volumes), service(settings, NOTIFIER, NOTIFIER, [("http", port)]),
            service_monitor(settings, NOTIFIER, "http"), pod_disruption_budget(settings, NOTIFIER, NOTIFIER)]


def aiops_deployment(settings: DeploySettings, name: str, prometheus_url: str,
                     extra_labels: dict[str, str] | None = None, size: dict | None = None,
                     query_url: str | None = None) -> dict:
    """An AIOps Deployment learning from (and computing risk on) the Prometheus at `prometheus_url`;
    `query_url`: where it answers questions (`POST /api/v1/ask`; default: `prometheus_url`)."""
    port = settings.ports.aiops
    container = {
        "name": "aiops", "image": settings.image(settings.services_image),
        "args": ["aiops", "serve", "--listen", f"0.0.0.0:{port}", "--model-dir", "/var/lib/vigil/aiops",
                 "--prometheus-url", prometheus_url, "--match", AIOPS_MATCH,
                 *(("--query-url", query_url) if query_url else ())],
        "ports": [container_port("http", port)],
        # /healthz answers 503 until a model is loaded: not ready (no traffic) but alive while it trains
        "readinessProbe": http_probe("/healthz", "http"),
        "livenessProbe": http_probe("/metrics", "http", period=30, timeout=10, initial=30),
        "resources": size or aiops_resources(BASE_FLEET_GPUS),
        "securityContext": restricted_security(),
        "volumeMounts": [{"name": "models", "mountPath": "/var/lib/vigil/aiops"}, {"name": "tmp", "mountPath": "/tmp"}],
    }
    volumes = [{"name": "models", "emptyDir": {"sizeLimit": "2Gi"}}, {"name": "tmp", "emptyDir": {"sizeLimit": "256Mi"}}]
    return _deployment(settings, name, 1, container, volumes, component=AIOPS, extra_labels=extra_labels)


def aiops(settings: DeploySettings) -> list[dict]:
    port = settings.ports.aiops
    deployment = aiops_deployment(settings, AIOPS, settings.service_url(PROMETHEUS_SERVICE, settings.ports.prometheus))
    return [service_account(settings, AIOPS, AIOPS), deployment,
            service(settings, AIOPS, AIOPS, [("http", port)]), service_monitor(settings, AIOPS, "http"),
            pod_disruption_budget(settings, AIOPS, AIOPS)]


def service_monitor(settings: DeploySettings, component: str, port: str, job: str | None = None,
                    interval: str = "15s", name: str | None = None, extra_labels: dict[str, str] | None = None) -> dict:
    """Scrape the endpoints of `component`'s Service on `port`, under the job name the rules expect
    (`name` and `extra_labels`: one of several Services of a component, the Service labelled with them)."""
    endpoint = {"port": port, "path": "/metrics", "interval": interval, "scrapeTimeout": "10s",
                "honorLabels": True,
                "relabelings": [{"targetLabel": "job", "replacement": job or SERVICE_JOBS[component]}]}
    return obj("monitoring.coreos.com/v1", "ServiceMonitor", metadata(settings, name or component, component),
               spec={"selector": {"matchLabels": {**selector(component), **(extra_labels or {})}},
                     "endpoints": [endpoint]})
