"""Building blocks shared by every object of the Kubernetes deployment: settings, names, labels,
metadata, the hardened container defaults, probes and resources. Pure data, no I/O."""

from __future__ import annotations

from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version

PART_OF = "vigil"
MANAGED_BY = "vigil-deploy-kubernetes"
# The prometheus-operator selects our ServiceMonitors, PodMonitors and PrometheusRules by this label
SELECTOR_LABEL = {"app.kubernetes.io/part-of": PART_OF}
KUBERNETES_VERSION = "1.32"  # the API version the manifests are written and validated for
PROMETHEUS_OPERATOR_VERSION = "0.80"  # the CRDs of that release (monitoring.coreos.com/v1)


def vigil_version() -> str:
    try:
        return version("vigil")
    except PackageNotFoundError:  # a source tree that was never installed
        return "0.0.0"


@dataclass(frozen=True)
class Ports:
    gpu_exporter: int = 9835
    node_health: int = 9101
    node_exporter: int = 9100
    notifier: int = 9095
    aiops: int = 9605
    alertmanager: int = 9093
    alertmanager_cluster: int = 9094
    prometheus: int = 9090
    grafana: int = 3000
    victoria_metrics: int = 8428
    vmalert: int = 8880


@dataclass(frozen=True)
class DeploySettings:
    """What a user may change without editing the generator (the overlays change sizes, not these)."""

    namespace: str = "vigil"
    # the two images of deploy/images/ (docs/deploy.md, Container images): entrypoint `vigil`, so a
    # container's `args` pick the command; retag them for your registry with kustomize's `images:`
    exporter_image: str = "vigil-exporter"  # vigil exporter gpu | node (smartmontools inside)
    services_image: str = "vigil-services"  # vigil notifier serve | aiops serve
    tag: str = field(default_factory=vigil_version)
    alertmanager_version: str = "v0.25.0"  # the releases the rules and configs are tested with (Debian's)
    prometheus_version: str = "v2.42.0"
    node_exporter_image: str = "quay.io/prometheus/node-exporter:v1.8.2"
    grafana_image: str = "docker.io/grafana/grafana:11.6.0"
    # VictoriaMetrics single-node and vmalert: one release for both images (docs/deploy.md, Long-term store)
    victoria_metrics_version: str = "v1.153.0"
    ports: Ports = field(default_factory=Ports)

    def image(self, name: str) -> str:
        return f"{name}:{self.tag}"

    def service_url(self, service: str, port: int, path: str = "") -> str:
        """The in-cluster URL of `service` (a Service of this namespace)."""
        return f"http://{service}.{self.namespace}.svc:{port}{path}"


# Labels the prometheus-operator sets on the pods of an Alertmanager or Prometheus CR, over any of
# `podMetadata.labels` (`app.kubernetes.io/name` among them): Services and budgets must select these
def operator_pod_labels(kind: str, name: str) -> dict[str, str]:
    return {"app.kubernetes.io/name": kind, kind: name}


def labels(component: str) -> dict[str, str]:
    """Every object's labels; `selector(component)` is the subset that selects a component's pods."""
    return {"app.kubernetes.io/name": component, "app.kubernetes.io/part-of": PART_OF,
            "app.kubernetes.io/managed-by": MANAGED_BY}


def selector(component: str) -> dict[str, str]:
    return {"app.kubernetes.io/name": component, "app.kubernetes.io/part-of": PART_OF}


def metadata(settings: DeploySettings, name: str, component: str, **extra) -> dict:
    return {"name": name, "namespace": settings.namespace, "labels": labels(component), **extra}


def obj(api_version: str, kind: str, meta: dict, **body) -> dict:
    return {"apiVersion": api_version, "kind": kind, "metadata": meta, **body}


IMAGE_USER = 10001  # the images' user `vigil`


def restricted_security(user: int = IMAGE_USER) -> dict:
    """The container security context of the `restricted` Pod Security Standard: non-root, no
    capabilities, no privilege escalation, read-only root filesystem, the runtime's seccomp profile."""
    return {"runAsNonRoot": True, "runAsUser": user, "runAsGroup": user, "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True, "capabilities": {"drop": ["ALL"]},
            "seccompProfile": {"type": "RuntimeDefault"}}


def resources(cpu: str, memory: str, cpu_limit: str | None = None, memory_limit: str | None = None) -> dict:
    """Requests, and limits (CPU in millicores) (memory limit = request unless given: a pod is not killed for what it was
    promised; CPU limit twice the request unless given)."""
    _double(cpu_limit or cpu)  # refuses a CPU quantity not in millicores
    return {"requests": {"cpu": cpu, "memory": memory},
            "limits": {"cpu": cpu_limit or _double(cpu), "memory": memory_limit or memory}}


def _double(cpu: str) -> str:
    # millicores only: the CRD models take a quantity of bare digits ("4") for an int and fail on it
    if not cpu.endswith("m"):
        raise ValueError(f"CPU quantity {cpu!r}: write it in millicores (e.g. 4000m)")
    return f"{int(cpu[:-1]) * 2}m"


def http_probe(path: str, port: str, period: int = 10, timeout: int = 5, failures: int = 3, initial: int = 0) -> dict:
    probe = {"httpGet": {"path": path, "port": port}, "periodSeconds": period, "timeoutSeconds": timeout,
             "failureThreshold": failures}
    if initial:
        probe["initialDelaySeconds"] = initial
    return probe


def container_port(name: str, port: int) -> dict:
    return {"name": name, "containerPort": port, "protocol": "TCP"}


def field_env(name: str, field_path: str) -> dict:
    return {"name": name, "valueFrom": {"fieldRef": {"fieldPath": field_path}}}


def secret_env(name: str, secret: str, key: str) -> dict:
    return {"name": name, "valueFrom": {"secretKeyRef": {"name": secret, "key": key}}}


def service(settings: DeploySettings, name: str, component: str, ports: list[tuple[str, int]],
            pod_selector: dict[str, str] | None = None) -> dict:
    spec: dict = {"selector": pod_selector or selector(component),
                  "ports": [{"name": port_name, "port": port, "targetPort": port_name, "protocol": "TCP"}
                            for port_name, port in ports]}
    return obj("v1", "Service", metadata(settings, name, component), spec=spec)


def pod_disruption_budget(settings: DeploySettings, name: str, component: str, max_unavailable: int = 1,
                          pod_selector: dict[str, str] | None = None) -> dict:
    """At most `max_unavailable` pods evicted at once (a drain never takes all replicas, and a single
    replica can still be drained: it is rescheduled)."""
    return obj("policy/v1", "PodDisruptionBudget", metadata(settings, name, component),
               spec={"maxUnavailable": max_unavailable, "selector": {"matchLabels": pod_selector or selector(component)}})


def service_account(settings: DeploySettings, name: str, component: str, automount: bool = False) -> dict:
    return obj("v1", "ServiceAccount", metadata(settings, name, component), automountServiceAccountToken=automount)


def placeholder_secret(settings: DeploySettings, name: str, component: str, data: dict[str, str],
                       note: str) -> dict:
    """A Secret whose values the user replaces before applying (docs/deploy.md, Secrets to fill)."""
    meta = metadata(settings, name, component, annotations={"vigil.dev/replace-before-use": note})
    return obj("v1", "Secret", meta, type="Opaque", stringData=data)


def spread(pod_labels: dict[str, str]) -> list[dict]:
    """`topologySpreadConstraints`: replicas on different nodes where the cluster allows it."""
    return [{"maxSkew": 1, "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "ScheduleAnyway",
             "labelSelector": {"matchLabels": pod_labels}}]


def operator_pods(container: str, pod_labels: dict[str, str], user: int = 1000) -> dict:
    """The hardening of an operator-made pod (`Alertmanager`, `Prometheus` spec fields): the upstream
    images' non-root user, and `container` (the operator's main container) restricted like ours."""
    return {"securityContext": {"runAsNonRoot": True, "runAsUser": user, "runAsGroup": 2000, "fsGroup": 2000,
                                "seccompProfile": {"type": "RuntimeDefault"}},
            "containers": [{"name": container, "securityContext": restricted_security(user)}],
            "topologySpreadConstraints": spread(pod_labels)}
