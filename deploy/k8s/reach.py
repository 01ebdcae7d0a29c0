"""Who can talk to whom, offline: every in-cluster URL (`http://NAME.NAMESPACE.svc:PORT`, or a
StatefulSet pod's `http://POD.SERVICE.NAMESPACE.svc:PORT`) written into a pod's spec — its command
line, its environment, the ConfigMaps it mounts, an operator CR's fields such as `remoteWrite` — names
a Service (or pod) that exists, on a port it serves, whose pods serve it on a container port, and the
NetworkPolicies of those pods let the calling pods in on that port.

`connections(objects)` lists each call with the pods it lands on and what is wrong with it (if anything).
The operator's own objects are modelled: its governing Services `alertmanager-operated` and
`prometheus-operated` and pods `alertmanager-<CR>-<i>`, listening on the upstream ports.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .checks import OPERATOR_KINDS, WORKLOAD_KINDS, Pods, _key, _selects, pods_of

URL = re.compile(r"https?://([a-z0-9.-]+):(\d+)")
OPERATOR_PORTS = {"Alertmanager": 9093, "Prometheus": 9090}  # the port `web` of the operator's pods


@dataclass(frozen=True)
class Connection:
    source: str  # "Deployment/vigil-vmalert"
    url: str
    targets: tuple[str, ...]  # the owners of the pods it reaches
    problem: str | None


def _strings(node) -> list[str]:
    if isinstance(node, dict):
        return [s for value in node.values() for s in _strings(value)]
    if isinstance(node, list):
        return [s for value in node for s in _strings(value)]
    return [node] if isinstance(node, str) else []


def _texts(obj: dict, named: dict) -> list[str]:
    """The strings of a pod's spec (or an operator CR's), and of the ConfigMaps its pods mount."""
    spec = obj["spec"]["template"]["spec"] if obj["kind"] in WORKLOAD_KINDS else obj["spec"]
    found = _strings(spec)
    for volume in spec.get("volumes", []):
        if "configMap" in volume:
            found += _strings(named.get(("ConfigMap", volume["configMap"]["name"]), {}).get("data", {}))
    return found


def _container_ports(obj: dict) -> dict[str, int]:
    if obj["kind"] in OPERATOR_KINDS:
        return {"web": OPERATOR_PORTS[obj["kind"]]}
    return {p["name"]: p["containerPort"] for c in obj["spec"]["template"]["spec"]["containers"]
            for p in c.get("ports", []) if "name" in p}


def _landing(host: str, port: int, namespace: str, objects: list[dict], pods: list[Pods]) -> tuple[list, str | None]:
    """[(Pods, container port)] a call to host:port lands on, or why it lands nowhere."""
    owners = {_key(o): o for o in objects}
    parts = host.split(".")
    if parts[-2:] != [namespace, "svc"] or len(parts) not in (3, 4):
        return [], f"{host} is not a Service or pod of the namespace {namespace}"
    *pod_name, name = parts[:-2]
    operator_kind = {f"{kind.lower()}-operated": kind for kind in OPERATOR_KINDS}.get(name)
    if operator_kind:  # the operator's headless Service: its pods, on their own ports
        chosen = [p for p in pods if p.owner.startswith(f"{operator_kind}/")]
        if pod_name:
            crs = [o for o in objects if o["kind"] == operator_kind
                   and any(pod_name[0] == f"{operator_kind.lower()}-{o['metadata']['name']}-{i}"
                           for i in range(o["spec"].get("replicas", 1)))]
            if not crs:
                return [], f"no {operator_kind} pod is named {pod_name[0]}"
            chosen = [p for p in chosen if p.owner == _key(crs[0])]
        return [(p, port) for p in chosen], None
    service = next((o for o in objects if o["kind"] == "Service" and o["metadata"]["name"] == name), None)
    if service is None:
        return [], f"Service {name!r} does not exist"
    if pod_name:
        sets = [o for o in objects if o["kind"] == "StatefulSet" and o["spec"].get("serviceName") == name
                and any(pod_name[0] == f"{o['metadata']['name']}-{i}" for i in range(o["spec"]["replicas"]))]
        if not sets:
            return [], f"no StatefulSet pod {pod_name[0]} behind Service {name!r}"
        return [(p, port) for p in pods if p.owner == _key(sets[0])], None
    ports = [p for p in service["spec"]["ports"] if p["port"] == port]
    if not ports:
        return [], f"Service {name!r} has no port {port}"
    target = ports[0]["targetPort"]
    landed = []
    for pod in (p for p in pods if _selects(service["spec"]["selector"], p.labels)):
        number = _container_ports(owners[pod.owner]).get(target) if isinstance(target, str) else target
        if number is None:
            return [], f"Service {name!r} targets port {target!r}, which {pod.owner} does not declare"
        landed.append((pod, number))
    return (landed, None) if landed else ([], f"Service {name!r} selects no pod")


def _admits(policy: dict, source: dict, port: int) -> bool:
    for rule in policy["spec"].get("ingress", []):
        peers = rule.get("from")
        peer_ok = peers is None or any(peer.get("namespaceSelector") == {} and "podSelector" not in peer
                                       or _selects(peer.get("podSelector", {}).get("matchLabels", {}), source)
                                       for peer in peers)
        ports = rule.get("ports")
        if peer_ok and (ports is None or any(p.get("port") == port and p.get("protocol", "TCP") == "TCP" for p in ports)):
            return True
    return False


def _blocked(policies: list[dict], source: dict, target: Pods, port: int) -> bool:
    applying = [p for p in policies if _selects(p["spec"]["podSelector"].get("matchLabels", {}), target.labels)
                and "Ingress" in p["spec"].get("policyTypes", ["Ingress"])]
    return bool(applying) and not any(_admits(p, source, port) for p in applying)


def connections(objects: list[dict], namespace: str = "vigil") -> list[Connection]:
    named = {(o["kind"], o["metadata"]["name"]): o for o in objects}
    pods = pods_of(objects)
    policies = [o for o in objects if o["kind"] == "NetworkPolicy"]
    found = []
    for obj in objects:
        if obj["kind"] not in WORKLOAD_KINDS and obj["kind"] not in OPERATOR_KINDS:
            continue
        sources = [p for p in pods if p.owner == _key(obj)]
        urls = sorted({m.group(0) for text in _texts(obj, named) for m in URL.finditer(text)
                       if m.group(1).endswith(".svc")})
        for url in urls:
            host, port = URL.match(url).groups()
            landed, problem = _landing(host, int(port), namespace, objects, pods)
            if problem is None:
                refused = sorted({t.owner for t, number in landed for s in sources
                                  if _blocked(policies, s.labels, t, number)})
                if refused:
                    problem = f"no NetworkPolicy lets it into {', '.join(refused)}"
            found.append(Connection(_key(obj), url, tuple(sorted({t.owner for t, _ in landed})),
                                    None if problem is None else f"{_key(obj)} → {url}: {problem}"))
    return found


def problems(objects: list[dict], namespace: str = "vigil") -> list[str]:
    return [c.problem for c in connections(objects, namespace) if c.problem]
