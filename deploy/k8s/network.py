"""NetworkPolicies: nothing reaches a vigil pod but what must (ingress only: the notifier must reach
channels and PostgreSQL wherever they are, so egress is left to the cluster's own policy).

node-exporter runs on the host network, where NetworkPolicies do not apply (docs/deploy.md)."""

from __future__ import annotations

from . import alertmanager, prometheus
from .exporters import GPU_EXPORTER, NODE_HEALTH
from .grafana import GRAFANA
from .meta import DeploySettings, metadata, obj, selector
from .services import AIOPS, NOTIFIER
from .victoria import VICTORIA_METRICS

ANYWHERE = None  # any pod of any namespace (users: the web console, Grafana, through your ingress)


def policy(settings: DeploySettings, name: str, pods: dict[str, str],
            rules: list[tuple[list[dict[str, str]] | None, list[tuple[str, int]]]]) -> dict:
    """Ingress to `pods` only from the pods of each rule (None: any pod) on the rule's (protocol, port)s."""
    ingress = []
    for sources, ports in rules:
        rule: dict = {"ports": [{"protocol": protocol, "port": port} for protocol, port in ports]}
        if sources is not None:
            rule["from"] = [{"podSelector": {"matchLabels": source}} for source in sources]
        else:
            rule["from"] = [{"namespaceSelector": {}}]
        ingress.append(rule)
    spec = {"podSelector": {"matchLabels": pods}, "policyTypes": ["Ingress"], "ingress": ingress}
    return obj("networking.k8s.io/v1", "NetworkPolicy", metadata(settings, name, name.removesuffix("-ingress")),
               spec=spec)


def network_policies(settings: DeploySettings) -> list[dict]:
    p = settings.ports
    scraper = prometheus.POD_LABELS
    peers = alertmanager.POD_LABELS
    deny = obj("networking.k8s.io/v1", "NetworkPolicy", metadata(settings, "vigil-default-deny-ingress", "vigil"),
               spec={"podSelector": {}, "policyTypes": ["Ingress"]})
    return [
        deny,
        policy(settings, f"{GPU_EXPORTER}-ingress", selector(GPU_EXPORTER), [([scraper], [("TCP", p.gpu_exporter)])]),
        policy(settings, f"{NODE_HEALTH}-ingress", selector(NODE_HEALTH), [([scraper], [("TCP", p.node_health)])]),
        policy(settings, f"{AIOPS}-ingress", selector(AIOPS), [([scraper], [("TCP", p.aiops)])]),
        # Alertmanager's webhooks, Prometheus' scrapes, and people (console, signed links in pages)
        policy(settings, f"{NOTIFIER}-ingress", selector(NOTIFIER), [(ANYWHERE, [("TCP", p.notifier)])]),
        policy(settings, f"{alertmanager.COMPONENT}-ingress", peers, [
            ([scraper, selector(NOTIFIER)], [("TCP", p.alertmanager)]),  # alerts; the notifier's reconciliation
            ([peers], [("TCP", p.alertmanager_cluster), ("UDP", p.alertmanager_cluster)])]),  # gossip
        policy(settings, f"{prometheus.COMPONENT}-ingress", scraper, [
            ([scraper, selector(GRAFANA), selector(NOTIFIER), selector(AIOPS)], [("TCP", p.prometheus)])]),
        policy(settings, f"{GRAFANA}-ingress", selector(GRAFANA), [(ANYWHERE, [("TCP", p.grafana)])]),
        # Prometheus' remote writes and scrapes; Grafana (a long-range datasource of your own). The large
        # overlay adds vmalert and the notifier (network-policies.yaml there)
        policy(settings, f"{VICTORIA_METRICS}-ingress", selector(VICTORIA_METRICS),
               [([scraper, selector(GRAFANA)], [("TCP", p.victoria_metrics)])]),
    ]
