"""Consistency of a rendered set of objects, offline: every ConfigMap, Secret (and key), ServiceAccount,
Service and ClusterRole an object names exists; every selector selects pods (or Services) that exist;
every named port a probe, Service, ServiceMonitor or PodMonitor uses is declared on the container;
every NetworkPolicy selects pods and lets in traffic from pods that exist.

`problems(objects)` lists each broken reference as "Kind/name: what" (empty: consistent).
The pods of the operator's `Alertmanager` and `Prometheus` are modelled as the operator makes them:
`podMetadata.labels` overlaid with the operator's labels (a Prometheus shard's pods also with
`operator.prometheus.io/shard`), and a container port `web`.
"""

from __future__ import annotations

from dataclasses import dataclass

from .meta import operator_pod_labels
from .prometheus import SHARD_LABEL

WORKLOAD_KINDS = ("Deployment", "DaemonSet", "StatefulSet")  # kinds with a pod template
OPERATOR_KINDS = {"Alertmanager": "alertmanager", "Prometheus": "prometheus"}  # kind -> its pods' app name


@dataclass(frozen=True)
class Pods:
    """The pods one workload makes: their labels and the named ports of their containers."""

    owner: str
    labels: dict
    ports: frozenset


def _key(obj: dict) -> str:
    return f"{obj['kind']}/{obj['metadata']['name']}"


def _selects(selector: dict, labels: dict) -> bool:
    return all(labels.get(k) == v for k, v in selector.items())


def pods_of(objects: list[dict]) -> list[Pods]:
    found = []
    for obj in objects:
        spec = obj.get("spec", {})
        if obj["kind"] in WORKLOAD_KINDS:
            template = spec["template"]
            ports = {p["name"] for c in template["spec"]["containers"] for p in c.get("ports", []) if "name" in p}
            found.append(Pods(_key(obj), template["metadata"].get("labels", {}), frozenset(ports)))
        elif obj["kind"] in OPERATOR_KINDS:
            labels = {**spec.get("podMetadata", {}).get("labels", {}),
                      **operator_pod_labels(OPERATOR_KINDS[obj["kind"]], obj["metadata"]["name"])}
            if obj["kind"] == "Prometheus":  # one StatefulSet per shard, its pods labelled with the shard
                found += [Pods(_key(obj), {**labels, SHARD_LABEL: str(shard)}, frozenset({"web"}))
                          for shard in range(spec.get("shards") or 1)]
            else:
                found.append(Pods(_key(obj), labels, frozenset({"web"})))
    return found


def _pod_specs(obj: dict) -> list[dict]:
    if obj["kind"] in WORKLOAD_KINDS:
        return [obj["spec"]["template"]["spec"]]
    if obj["kind"] in OPERATOR_KINDS:
        return [obj["spec"]]
    return []


def _data_keys(obj: dict) -> set[str]:
    return set(obj.get("data", {})) | set(obj.get("stringData", {}))


def _reference_problems(obj: dict, named: dict[tuple[str, str], dict]) -> list[str]:
    problems = []

    def need(kind: str, name: str, key: str | None = None, what: str = "") -> None:
        target = named.get((kind, name))
        if target is None:
            problems.append(f"{_key(obj)}: {what or kind} {name!r} does not exist")
        elif key is not None and key not in _data_keys(target):
            problems.append(f"{_key(obj)}: {kind} {name!r} has no key {key!r}")

    for pod in _pod_specs(obj):
        if "serviceAccountName" in pod:
            need("ServiceAccount", pod["serviceAccountName"])
        for volume in pod.get("volumes", []):
            if "configMap" in volume:
                for item in volume["configMap"].get("items", [{"key": None}]):
                    need("ConfigMap", volume["configMap"]["name"], item["key"])
            if "secret" in volume:
                need("Secret", volume["secret"]["secretName"])
            for source in volume.get("projected", {}).get("sources", []):
                if "configMap" in source:
                    need("ConfigMap", source["configMap"]["name"])
        for container in pod.get("containers", []):
            problems += _port_problems(obj, container)
            for env in container.get("env", []):
                ref = env.get("valueFrom", {})
                if "secretKeyRef" in ref:
                    need("Secret", ref["secretKeyRef"]["name"], ref["secretKeyRef"]["key"])
                if "configMapKeyRef" in ref:
                    need("ConfigMap", ref["configMapKeyRef"]["name"], ref["configMapKeyRef"]["key"])
    spec = obj.get("spec", {})
    if obj["kind"] == "Alertmanager":
        need("Secret", spec["configSecret"], "alertmanager.yaml", "configSecret")
        for name in spec.get("secrets", []):
            need("Secret", name)
    if obj["kind"] == "Prometheus":
        for target in spec.get("alerting", {}).get("alertmanagers", []):
            need("Service", target["name"], what="alerting Service")
    if obj["kind"] == "StatefulSet":
        need("Service", spec["serviceName"], what="governing Service")
    if obj["kind"] == "ClusterRoleBinding":
        need(obj["roleRef"]["kind"], obj["roleRef"]["name"])
        for subject in obj.get("subjects", []):
            need(subject["kind"], subject["name"])
    return problems


def _port_problems(obj: dict, container: dict) -> list[str]:
    declared = {p["name"] for p in container.get("ports", []) if "name" in p}
    problems = []
    for probe_name in ("readinessProbe", "livenessProbe", "startupProbe"):
        port = container.get(probe_name, {}).get("httpGet", {}).get("port")
        if isinstance(port, str) and port not in declared:
            problems.append(f"{_key(obj)}: {probe_name} of container {container['name']} uses port {port!r}, "
                            f"not one of {sorted(declared)}")
    if "image" in container and not (container.get("readinessProbe") and container.get("livenessProbe")):
        problems.append(f"{_key(obj)}: container {container['name']} lacks a readiness or liveness probe")
    return problems


def _selector_problems(obj: dict, pods: list[Pods], services: list[dict]) -> list[str]:
    kind, spec = obj["kind"], obj.get("spec", {})
    if kind == "Service":
        chosen = [p for p in pods if _selects(spec["selector"], p.labels)]
        if not chosen:
            return [f"{_key(obj)}: selector {spec['selector']} matches no pod"]
        return [f"{_key(obj)}: targetPort {port['targetPort']!r} is not a port of {p.owner}"
                for port in spec["ports"] if isinstance(port["targetPort"], str)
                for p in chosen if port["targetPort"] not in p.ports]
    if kind in WORKLOAD_KINDS:
        if not _selects(spec["selector"]["matchLabels"], spec["template"]["metadata"].get("labels", {})):
            return [f"{_key(obj)}: selector does not match its own pod template's labels"]
    if kind in ("PodDisruptionBudget", "PodMonitor", "NetworkPolicy"):
        selector = spec["podSelector" if kind == "NetworkPolicy" else "selector"].get("matchLabels", {})
        chosen = [p for p in pods if _selects(selector, p.labels)]
        if not chosen:
            return [f"{_key(obj)}: selector {selector} matches no pod"]
        rules = spec.get("ingress", []) if kind == "NetworkPolicy" else []
        sources = [peer["podSelector"].get("matchLabels", {}) for rule in rules for peer in rule.get("from", [])
                   if "podSelector" in peer]
        unmatched = [f"{_key(obj)}: ingress from {source} matches no pod" for source in sources
                     if not any(_selects(source, p.labels) for p in pods)]
        if unmatched:
            return unmatched
        if kind == "PodMonitor":
            return [f"{_key(obj)}: port {e['port']!r} is not a port of {p.owner}"
                    for e in spec["podMetricsEndpoints"] for p in chosen if e["port"] not in p.ports]
    if kind == "ServiceMonitor":
        chosen = [s for s in services if _selects(spec["selector"]["matchLabels"], s["metadata"].get("labels", {}))]
        if not chosen:
            return [f"{_key(obj)}: selector {spec['selector']['matchLabels']} matches no Service"]
        return [f"{_key(obj)}: port {e['port']!r} is not a port of {_key(s)}" for e in spec["endpoints"]
                for s in chosen if e["port"] not in {p["name"] for p in s["spec"]["ports"]}]
    return []


def problems(objects: list[dict]) -> list[str]:
    named = {(obj["kind"], obj["metadata"]["name"]): obj for obj in objects}
    pods = pods_of(objects)
    services = [obj for obj in objects if obj["kind"] == "Service"]
    found = []
    for obj in objects:
        found += _reference_problems(obj, named) + _selector_problems(obj, pods, services)
    return found
