"""The overlays: what changes between a small fleet and a large one, as data, written as kustomize
JSON 6902 patches (`op: replace` on the base's fields; `kustomize.render_overlay` applies the same
patches when no kustomize binary is at hand)."""

from __future__ import annotations

from dataclasses import dataclass

from vigil.rules.dump import dump_yaml

from . import alertmanager, prometheus
from .meta import resources
from .services import AIOPS, NOTIFIER


@dataclass(frozen=True)
class Size:
    notifier_replicas: int
    notifier: dict
    aiops: dict
    prometheus_shards: int
    prometheus: dict
    prometheus_storage: str
    alertmanager: dict


SIZES = {
    # up to ~1,000 GPUs: one Prometheus pair holds it (docs/scaling.md); the base's own values
    "small": Size(notifier_replicas=2, notifier=resources("250m", "256Mi", memory_limit="512Mi"),
                  aiops=resources("500m", "1Gi", memory_limit="2Gi"), prometheus_shards=1,
                  prometheus=resources("500m", "2Gi"), prometheus_storage="50Gi",
                  alertmanager=resources("100m", "128Mi", memory_limit="256Mi")),
    # thousands of GPUs: scraping split over 4 shards (each an HA pair), more notifier replicas
    "large": Size(notifier_replicas=4, notifier=resources("500m", "512Mi", memory_limit="1Gi"),
                  aiops=resources("2000m", "8Gi"), prometheus_shards=4,
                  prometheus=resources("4000m", "32Gi", cpu_limit="8000m"), prometheus_storage="500Gi",
                  alertmanager=resources("250m", "512Mi", memory_limit="1Gi")),
}


def _target(group: str, version: str, kind: str, name: str) -> dict:
    return {"group": group, "version": version, "kind": kind, "name": name} if group else \
        {"version": version, "kind": kind, "name": name}


def _patch(target: dict, ops: list[tuple[str, object]]) -> dict:
    return {"target": target, "patch": dump_yaml([{"op": "replace", "path": path, "value": value}
                                                   for path, value in ops])}


def patches(size: Size) -> list[dict]:
    """The overlay's patches; each path exists in the base (a `replace` of a missing path fails)."""
    container = "/spec/template/spec/containers/0/resources"
    monitoring = ("monitoring.coreos.com", "v1")
    return [
        _patch(_target("apps", "v1", "Deployment", NOTIFIER),
               [("/spec/replicas", size.notifier_replicas), (container, size.notifier)]),
        _patch(_target("apps", "v1", "Deployment", AIOPS), [(container, size.aiops)]),
        _patch(_target(*monitoring, "Prometheus", prometheus.PROMETHEUS),
               [("/spec/shards", size.prometheus_shards), ("/spec/resources", size.prometheus),
                ("/spec/storage/volumeClaimTemplate/spec/resources/requests/storage", size.prometheus_storage)]),
        _patch(_target(*monitoring, "Alertmanager", alertmanager.ALERTMANAGER),
               [("/spec/resources", size.alertmanager)]),
    ]


def overlay_kustomization(size_name: str) -> dict:
    return {"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
            "resources": ["../../base"], "patches": patches(SIZES[size_name])}
