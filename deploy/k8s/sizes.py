"""The overlays: what changes between a small fleet and a large one, as data, written as kustomize
patches (JSON 6902 `op: replace` on the base's fields; with several Prometheus shards also the objects and
patches of `sharded`); `kustomize.render_overlay` applies the same patches when no kustomize binary is
at hand."""

from __future__ import annotations

from dataclasses import dataclass

from vigil.rules import RuleSet

from . import alertmanager, prometheus, sharded, victoria
from .aiops_memory import BASE_FLEET_GPUS, aiops_resources
from .meta import DeploySettings, resources
from .services import AIOPS, NOTIFIER
from .sharded import MONITORING, replace, target


@dataclass(frozen=True)
class Size:
    gpus_per_shard: int  # the fleet one Prometheus shard (and its AIOps service) is sized for
    notifier_replicas: int
    notifier: dict
    aiops: dict  # of each AIOps Deployment (one per shard): `aiops_resources(gpus_per_shard)`
    prometheus_shards: int
    prometheus: dict
    prometheus_storage: str
    alertmanager: dict
    victoria_metrics: dict
    victoria_metrics_storage: str
    vmalert: dict  # with several shards only


SIZES = {
    # up to ~1,000 GPUs: one Prometheus pair holds it (docs/scaling.md); the base's own values
    "small": Size(gpus_per_shard=BASE_FLEET_GPUS, notifier_replicas=2, notifier=resources("250m", "256Mi", memory_limit="512Mi"),
                  aiops=aiops_resources(BASE_FLEET_GPUS), prometheus_shards=1,
                  prometheus=resources("500m", "2Gi"), prometheus_storage="50Gi",
                  alertmanager=resources("100m", "128Mi", memory_limit="256Mi"),
                  victoria_metrics=resources("500m", "2Gi"), victoria_metrics_storage="100Gi",
                  vmalert=resources("100m", "128Mi", memory_limit="256Mi")),
    # tens of thousands of GPUs: scraping split over 4 shards (each an HA pair) of up to 20,000 GPUs (what one
    # Prometheus held on 16 cores with every rule group under 1 s, docs/scaling.md), an AIOps service per
    # shard, the global rules in vmalert, more notifier replicas
    "large": Size(gpus_per_shard=20_000, notifier_replicas=4, notifier=resources("500m", "512Mi", memory_limit="1Gi"),
                  aiops=aiops_resources(20_000), prometheus_shards=4,
                  prometheus=resources("4000m", "32Gi", cpu_limit="8000m"), prometheus_storage="500Gi",
                  alertmanager=resources("250m", "512Mi", memory_limit="1Gi"),
                  victoria_metrics=resources("4000m", "16Gi", cpu_limit="8000m"), victoria_metrics_storage="2Ti",
                  vmalert=resources("500m", "512Mi", memory_limit="1Gi")),
}


def patches(size: Size) -> list[dict]:
    """The size's `replace` patches; each path exists in the base (a `replace` of a missing path fails)."""
    container = "/spec/template/spec/containers/0/resources"
    found = [
        replace(target("apps", "v1", "Deployment", NOTIFIER),
                [("/spec/replicas", size.notifier_replicas), (container, size.notifier)]),
        replace(target(*MONITORING, "Prometheus", prometheus.PROMETHEUS),
                [("/spec/shards", size.prometheus_shards), ("/spec/resources", size.prometheus),
                 ("/spec/storage/volumeClaimTemplate/spec/resources/requests/storage", size.prometheus_storage)]),
        replace(target(*MONITORING, "Alertmanager", alertmanager.ALERTMANAGER), [("/spec/resources", size.alertmanager)]),
        replace(target("apps", "v1", "StatefulSet", victoria.VICTORIA_METRICS),
                [(container, size.victoria_metrics),
                 ("/spec/volumeClaimTemplates/0/spec/resources/requests/storage", size.victoria_metrics_storage)]),
    ]
    if size.prometheus_shards == 1:  # sharded, the base's AIOps Deployment is replaced by one per shard
        found.insert(1, replace(target("apps", "v1", "Deployment", AIOPS), [(container, size.aiops)]))
    return found


def overlay(settings: DeploySettings, ruleset: RuleSet, size_name: str) -> tuple[dict, dict[str, list[dict]]]:
    """The overlay's kustomization and {file name beside it: objects}."""
    size = SIZES[size_name]
    files, extra = {}, []
    if size.prometheus_shards > 1:
        files = sharded.files(settings, ruleset, size.prometheus_shards, size.aiops, size.vmalert)
        extra = sharded.patches(settings, ruleset)
    kustomization = {"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
                     "resources": ["../../base", *files], "patches": patches(size) + extra}
    return kustomization, files
