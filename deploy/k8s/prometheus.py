"""Prometheus (prometheus-operator `Prometheus`, an HA pair; the large overlay shards it), the RBAC its
service discovery needs, and the rules as `PrometheusRule` objects from `vigil.rules.kubernetes` (the
same generator as `vigil rules generate --kubernetes`)."""

from __future__ import annotations

from vigil.rules import RuleSet
from vigil.rules.kubernetes import prometheus_rules

from .meta import (SELECTOR_LABEL, DeploySettings, metadata, obj, operator_pod_labels, operator_pods,
                   pod_disruption_budget, resources, service)
from .services import ALERTMANAGER_SERVICE, PROMETHEUS_SERVICE, service_monitor
from .victoria import REPLICA_LABEL, SCRAPE_INTERVAL, remote_write

PROMETHEUS = "vigil"  # the CR; the operator names its StatefulSets prometheus-vigil[-shard-N]
COMPONENT = "vigil-prometheus"
POD_LABELS = operator_pod_labels("prometheus", PROMETHEUS)
SHARD_LABEL = "operator.prometheus.io/shard"  # the operator's label on the pods of shard N ("0", "1", ...)
RBAC = "rbac.authorization.k8s.io/v1"


def rules(settings: DeploySettings, ruleset: RuleSet) -> list[dict]:
    return prometheus_rules(ruleset, namespace=settings.namespace, labels=SELECTOR_LABEL)


def _rbac(settings: DeploySettings) -> list[dict]:
    """Read-only discovery of the targets (pods, services, endpoints) and the nodes."""
    role_meta = {k: v for k, v in metadata(settings, COMPONENT, COMPONENT).items() if k != "namespace"}
    role = obj(RBAC, "ClusterRole", role_meta, rules=[
        {"apiGroups": [""], "resources": ["nodes", "nodes/metrics", "services", "endpoints", "pods"],
         "verbs": ["get", "list", "watch"]},
        {"apiGroups": ["discovery.k8s.io"], "resources": ["endpointslices"], "verbs": ["get", "list", "watch"]},
        {"nonResourceURLs": ["/metrics"], "verbs": ["get"]}])
    binding = obj(RBAC, "ClusterRoleBinding", dict(role_meta),
                  roleRef={"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": COMPONENT},
                  subjects=[{"kind": "ServiceAccount", "name": COMPONENT, "namespace": settings.namespace}])
    account = obj("v1", "ServiceAccount", metadata(settings, COMPONENT, COMPONENT))
    return [account, role, binding]


def shard_pod_labels(shard: int) -> dict[str, str]:
    """The labels of the pods (both replicas) of shard `shard`."""
    return {**POD_LABELS, SHARD_LABEL: str(shard)}


def prometheus(settings: DeploySettings) -> list[dict]:
    port = settings.ports.prometheus
    spec = {
        "replicas": 2,  # two identical replicas: Alertmanager deduplicates their alerts
        "shards": 1,
        "image": f"quay.io/prometheus/prometheus:{settings.prometheus_version}",
        "version": settings.prometheus_version,
        "serviceAccountName": COMPONENT,
        "podMetadata": {"labels": dict(SELECTOR_LABEL)},
        "scrapeInterval": SCRAPE_INTERVAL, "evaluationInterval": SCRAPE_INTERVAL,
        "externalLabels": {"cluster": "vigil"},
        "replicaExternalLabelName": REPLICA_LABEL,  # dropped from alerts by the operator, from remote writes by us
        "remoteWrite": remote_write(settings),
        # only this namespace's monitors and rules, those labelled as vigil's
        "serviceMonitorSelector": {"matchLabels": dict(SELECTOR_LABEL)},
        "podMonitorSelector": {"matchLabels": dict(SELECTOR_LABEL)},
        "ruleSelector": {"matchLabels": dict(SELECTOR_LABEL)},
        "alerting": {"alertmanagers": [{"namespace": settings.namespace, "name": ALERTMANAGER_SERVICE,
                                        "port": "web", "apiVersion": "v2"}]},
        "retention": "15d",
        "storage": {"volumeClaimTemplate": {"spec": {"accessModes": ["ReadWriteOnce"],
                                                     "resources": {"requests": {"storage": "50Gi"}}}}},
        "resources": resources("500m", "2Gi"),
        **operator_pods("prometheus", POD_LABELS),
    }
    return [*_rbac(settings),
            obj("monitoring.coreos.com/v1", "Prometheus", metadata(settings, PROMETHEUS, COMPONENT), spec=spec),
            service(settings, PROMETHEUS_SERVICE, COMPONENT, [("web", port)], POD_LABELS),
            service_monitor(settings, COMPONENT, "web", job="prometheus"),
            pod_disruption_budget(settings, COMPONENT, COMPONENT, pod_selector=POD_LABELS)]
