"""Grafana with vigil's dashboards: one ConfigMap per dashboard (the very JSON `vigil dashboards build`
writes) and one with the provisioning files (the same generator, the datasource pointing at the
in-cluster Prometheus). The ConfigMaps also carry the `grafana_dashboard` label that the Grafana
sidecar of kube-prometheus-stack picks up, for a cluster that has its own Grafana."""

from __future__ import annotations

from vigil.dashboards.build import DASHBOARD_PATH, DATASOURCE_FILE, PROVIDER_FILE, provisioning, render
from vigil.rules.dump import dump_yaml

from .meta import (DeploySettings, container_port, http_probe, labels, metadata, obj, placeholder_secret,
                   pod_disruption_budget, resources, restricted_security, secret_env, selector, service,
                   service_account)
from .services import PROMETHEUS_SERVICE

GRAFANA = "vigil-grafana"
PROVISIONING = "vigil-grafana-provisioning"
ADMIN_SECRET = "vigil-grafana-admin"
SIDECAR_LABEL = {"grafana_dashboard": "1"}
# ConfigMap keys cannot hold "/": provisioning file -> key
PROVISIONING_KEYS = {PROVIDER_FILE: "dashboards.yaml", DATASOURCE_FILE: "datasources.yaml"}


def dashboard_files(settings: DeploySettings) -> dict[str, str]:
    """`vigil dashboards build`'s files, the datasource URL being the in-cluster Prometheus Service."""
    return render(settings.service_url(PROMETHEUS_SERVICE, settings.ports.prometheus))


def datasources(url: str) -> str:
    """The provisioning file of the datasource (`vigil dashboards build`'s), pointing at `url`: the
    large overlay's patch points it at VictoriaMetrics (a Prometheus shard sees a part of the fleet)."""
    return dump_yaml(provisioning(url)[DATASOURCE_FILE])


def config_map_name(json_path: str) -> str:
    """json/vigil-fleet.json -> vigil-dashboard-fleet"""
    return "vigil-dashboard-" + json_path.removeprefix("json/").removesuffix(".json").removeprefix("vigil-")


def config_maps(settings: DeploySettings) -> list[dict]:
    files = dashboard_files(settings)
    maps = []
    for path, text in sorted(files.items()):
        if path.startswith("json/"):
            meta = metadata(settings, config_map_name(path), GRAFANA)
            meta["labels"].update(SIDECAR_LABEL)
            maps.append(obj("v1", "ConfigMap", meta, data={path.removeprefix("json/"): text}))
    maps.append(obj("v1", "ConfigMap", metadata(settings, PROVISIONING, GRAFANA),
                    data={key: files[path] for path, key in PROVISIONING_KEYS.items()}))
    return maps


def grafana(settings: DeploySettings) -> list[dict]:
    maps = config_maps(settings)
    dashboards = [m["metadata"]["name"] for m in maps if m["metadata"]["name"] != PROVISIONING]
    port = settings.ports.grafana
    container = {
        "name": "grafana", "image": settings.grafana_image,
        "env": [secret_env("GF_SECURITY_ADMIN_PASSWORD", ADMIN_SECRET, "password"),
                {"name": "GF_AUTH_ANONYMOUS_ENABLED", "value": "false"},
                {"name": "GF_ANALYTICS_REPORTING_ENABLED", "value": "false"},
                # the image also logs to /var/log/grafana, which the read-only root filesystem refuses
                {"name": "GF_LOG_MODE", "value": "console"}],
        "ports": [container_port("http", port)],
        "readinessProbe": http_probe("/api/health", "http"),
        "livenessProbe": http_probe("/api/health", "http", period=20, initial=30),
        "resources": resources("100m", "256Mi", memory_limit="512Mi"),
        "securityContext": restricted_security(472),
        "volumeMounts": [{"name": "provisioning", "mountPath": "/etc/grafana/provisioning", "readOnly": True},
                         {"name": "dashboards", "mountPath": DASHBOARD_PATH, "readOnly": True},
                         {"name": "data", "mountPath": "/var/lib/grafana"}, {"name": "tmp", "mountPath": "/tmp"}],
    }
    volumes = [
        {"name": "provisioning", "configMap": {"name": PROVISIONING, "items": [
            {"key": key, "path": path.removeprefix("provisioning/")} for path, key in PROVISIONING_KEYS.items()]}},
        {"name": "dashboards", "projected": {"sources": [{"configMap": {"name": name}} for name in dashboards]}},
        {"name": "data", "emptyDir": {"sizeLimit": "1Gi"}}, {"name": "tmp", "emptyDir": {"sizeLimit": "64Mi"}}]
    pod = {"serviceAccountName": GRAFANA, "automountServiceAccountToken": False,
           "securityContext": {"fsGroup": 472}, "containers": [container], "volumes": volumes}
    deployment = obj("apps/v1", "Deployment", metadata(settings, GRAFANA, GRAFANA), spec={
        "replicas": 1, "selector": {"matchLabels": selector(GRAFANA)},
        "template": {"metadata": {"labels": labels(GRAFANA)}, "spec": pod}})
    admin = placeholder_secret(settings, ADMIN_SECRET, GRAFANA, {"password": "REPLACE-ME"},
                               "Grafana's admin password")
    return [*maps, admin, service_account(settings, GRAFANA, GRAFANA), deployment,
            service(settings, GRAFANA, GRAFANA, [("http", port)]), pod_disruption_budget(settings, GRAFANA, GRAFANA)]
