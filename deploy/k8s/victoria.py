"""VictoriaMetrics single-node, the long-term and global store: a StatefulSet with its volume, its
Service, ServiceMonitor and PodDisruptionBudget, and the `remoteWrite` of the Prometheus CR to it.

Both replicas of each Prometheus shard write every series; the operator gives each replica its own
`prometheus_replica` external label. The remote write drops that label (`writeRelabelConfigs`: Prometheus
adds the external labels before relabelling), so the two copies are one series in VictoriaMetrics, whose
`-dedup.minScrapeInterval` (the scrape interval) keeps one sample of it per interval: the same scheme as
the local ha profile (vigil/stack/config/ha_prometheus.py). In the base, because long-term storage is
wanted at every size (docs/deploy.md, Long-term store).
"""

from __future__ import annotations

from .meta import (DeploySettings, container_port, http_probe, labels, metadata, obj, pod_disruption_budget,
                   resources, restricted_security, selector, service, service_account)
from .services import service_monitor

VICTORIA_METRICS = "vigil-victoria-metrics"
IMAGE = "victoriametrics/victoria-metrics"
DATA = "/victoria-metrics-data"
USER = 65534  # the image has no user of its own: nobody, owning the volume through fsGroup
SCRAPE_INTERVAL = "15s"  # the Prometheus CR's; the dedup interval must equal it
RETENTION = "1y"
# the operator's default `replicaExternalLabelName`, set explicitly on the CR so the two stay in step
REPLICA_LABEL = "prometheus_replica"
JOB = "victoria-metrics"


def url(settings: DeploySettings, path: str = "") -> str:
    """VictoriaMetrics' in-cluster URL: its Prometheus-compatible query API is under it (`/api/v1/...`)."""
    return settings.service_url(VICTORIA_METRICS, settings.ports.victoria_metrics, path)


def remote_write(settings: DeploySettings) -> list[dict]:
    """The Prometheus CR's `remoteWrite`: every series, without the replica label (see the module's doc)."""
    return [{"name": "victoria-metrics", "url": url(settings, "/api/v1/write"),
             "writeRelabelConfigs": [{"action": "labeldrop", "regex": REPLICA_LABEL}],
             "queueConfig": {"batchSendDeadline": "5s"}}]


def victoria_metrics(settings: DeploySettings) -> list[dict]:
    port = settings.ports.victoria_metrics
    container = {
        "name": "victoria-metrics", "image": f"{IMAGE}:{settings.victoria_metrics_version}",
        "args": [f"-storageDataPath={DATA}", f"-retentionPeriod={RETENTION}",
                 f"-dedup.minScrapeInterval={SCRAPE_INTERVAL}", f"-httpListenAddr=:{port}"],
        "ports": [container_port("http", port)],
        "readinessProbe": http_probe("/health", "http", period=5),
        # opening a large data folder after a restart takes a while: alive long before it is ready
        "livenessProbe": http_probe("/health", "http", period=20, initial=60),
        "resources": resources("500m", "2Gi"),
        "securityContext": restricted_security(USER),
        "volumeMounts": [{"name": "data", "mountPath": DATA}],
    }
    pod = {"serviceAccountName": VICTORIA_METRICS, "automountServiceAccountToken": False,
           "securityContext": {"fsGroup": USER}, "containers": [container]}
    claim = {"metadata": {"name": "data"},
             "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "100Gi"}}}}
    statefulset = obj("apps/v1", "StatefulSet", metadata(settings, VICTORIA_METRICS, VICTORIA_METRICS), spec={
        "serviceName": VICTORIA_METRICS, "replicas": 1, "selector": {"matchLabels": selector(VICTORIA_METRICS)},
        "template": {"metadata": {"labels": labels(VICTORIA_METRICS)}, "spec": pod},
        "volumeClaimTemplates": [claim]})
    return [service_account(settings, VICTORIA_METRICS, VICTORIA_METRICS), statefulset,
            service(settings, VICTORIA_METRICS, VICTORIA_METRICS, [("http", port)]),
            service_monitor(settings, VICTORIA_METRICS, "http", job=JOB),
            pod_disruption_budget(settings, VICTORIA_METRICS, VICTORIA_METRICS)]
