"""What an overlay with several Prometheus shards adds to the base and changes in it (docs/deploy.md,
Sharded layout): the objects as extra files of the overlay, the changes as kustomize patches.

- rules: each shard's `PrometheusRule`s keep the shard-local half of the rules (a group left with none is
  deleted); vmalert runs the global half over VictoriaMetrics (`vmalert.py`);
- AIOps: one Deployment per shard, AIOps i learning from shard i through a Service that selects the
  pods of that shard by the operator's `operator.prometheus.io/shard` label (and answering questions
  from VictoriaMetrics, `--query-url`), with its own Service and ServiceMonitor; the base's single AIOps
  Deployment, Service and ServiceMonitor are deleted (its ServiceAccount, budget and NetworkPolicy select
  every shard's pods and stay);
- global views: Grafana's datasource and the notifier's queries go to VictoriaMetrics, since the
  `vigil-prometheus` Service reaches a random shard;
- NetworkPolicies: vmalert scraped, vmalert to Alertmanager, vmalert, the notifier and the AIOps shards
  (their answers to `POST /api/v1/ask`) to VictoriaMetrics.
"""

from __future__ import annotations

from vigil.rules import RuleSet
from vigil.rules.dump import dump_yaml

from . import alertmanager, grafana, prometheus, victoria, vmalert
from .meta import DeploySettings, selector, service
from .network import policy
from .services import AIOPS, NOTIFIER, PROMETHEUS_SERVICE, aiops_deployment, notifier_args, service_monitor

SHARD_LABEL = "vigil.dev/prometheus-shard"  # on an AIOps shard's Deployment, pods, Service and monitor
MONITORING = ("monitoring.coreos.com", "v1")


def target(group: str, version: str, kind: str, name: str) -> dict:
    return {"group": group, "version": version, "kind": kind, "name": name} if group else \
        {"version": version, "kind": kind, "name": name}


def replace(patch_target: dict, ops: list[tuple[str, object]]) -> dict:
    """A JSON 6902 patch of `op: replace`s (each path exists in the base)."""
    return {"target": patch_target, "patch": dump_yaml([{"op": "replace", "path": path, "value": value}
                                                         for path, value in ops])}


def delete(patch_target: dict) -> dict:
    """A strategic-merge patch that deletes the object `patch_target` from the base."""
    group, version = patch_target.get("group"), patch_target["version"]
    api_version = f"{group}/{version}" if group else version
    return {"target": patch_target, "patch": dump_yaml({"$patch": "delete", "apiVersion": api_version,
                                                        "kind": patch_target["kind"],
                                                        "metadata": {"name": patch_target["name"]}})}


def shard_service_name(shard: int) -> str:
    return f"{PROMETHEUS_SERVICE}-shard-{shard}"


def aiops_name(shard: int) -> str:
    return f"{AIOPS}-shard-{shard}"


def aiops_shards(settings: DeploySettings, shards: int, size: dict) -> list[dict]:
    """Per shard: the Service of that shard's Prometheus pods, and the AIOps Deployment, Service and
    ServiceMonitor that read from it."""
    objects = []
    for shard in range(shards):
        extra = {SHARD_LABEL: str(shard)}
        name = aiops_name(shard)
        shard_service = service(settings, shard_service_name(shard), prometheus.COMPONENT,
                                [("web", settings.ports.prometheus)], prometheus.shard_pod_labels(shard))
        aiops_service = service(settings, name, AIOPS, [("http", settings.ports.aiops)], {**selector(AIOPS), **extra})
        aiops_service["metadata"]["labels"].update(extra)
        prometheus_url = settings.service_url(shard_service_name(shard), settings.ports.prometheus)
        # learns from its shard; answers questions about the whole fleet from VictoriaMetrics
        deployment = aiops_deployment(settings, name, prometheus_url, extra, size, query_url=victoria.url(settings))
        objects += [shard_service, deployment, aiops_service,
                    service_monitor(settings, AIOPS, "http", name=name, extra_labels=extra)]
    return objects


def network_policies(settings: DeploySettings) -> list[dict]:
    p = settings.ports
    scraper, vmalert_pods = prometheus.POD_LABELS, selector(vmalert.VMALERT)
    return [
        policy(settings, f"{vmalert.VMALERT}-ingress", vmalert_pods, [([scraper], [("TCP", p.vmalert)])]),
        # added to the base's policies (NetworkPolicies add up): the global rules' alerts
        policy(settings, f"{alertmanager.COMPONENT}-vmalert-ingress", alertmanager.POD_LABELS,
               [([vmalert_pods], [("TCP", p.alertmanager)])]),
        # the global rules' queries, records and alert state; the notifier's and the AIOps shards' queries
        policy(settings, f"{victoria.VICTORIA_METRICS}-readers-ingress", selector(victoria.VICTORIA_METRICS),
               [([vmalert_pods, selector(NOTIFIER), selector(AIOPS)], [("TCP", p.victoria_metrics)])]),
    ]


def files(settings: DeploySettings, ruleset: RuleSet, shards: int, aiops_size: dict, vmalert_size: dict) -> dict:
    """{file name in the overlay: objects} the overlay adds to the base."""
    return {"vmalert.yaml": vmalert.vmalert(settings, ruleset, vmalert_size),
            "aiops-shards.yaml": aiops_shards(settings, shards, aiops_size),
            "network-policies.yaml": network_policies(settings)}


def patches(settings: DeploySettings, ruleset: RuleSet) -> list[dict]:
    """The base's objects the overlay deletes or points elsewhere."""
    local, _, _ = vmalert.split_rules(ruleset)
    local_groups = {group["name"]: group for group in local["groups"]}
    found = []
    for rule in prometheus.rules(settings, ruleset):
        [group] = rule["spec"]["groups"]
        rule_target = target(*MONITORING, "PrometheusRule", rule["metadata"]["name"])
        found.append(replace(rule_target, [("/spec/groups", [local_groups[group["name"]]])])
                     if group["name"] in local_groups else delete(rule_target))
    for kind, group in (("Deployment", "apps"), ("Service", ""), ("ServiceMonitor", MONITORING[0])):
        found.append(delete(target(group, "v1", kind, AIOPS)))
    global_view = victoria.url(settings)
    # without its final newline, which kustomize drops from a patched block scalar anyway
    datasources = grafana.datasources(global_view).rstrip("\n")
    found.append(replace(target("", "v1", "ConfigMap", grafana.PROVISIONING),
                         [(f"/data/{grafana.PROVISIONING_KEYS[grafana.DATASOURCE_FILE]}", datasources)]))
    found.append(replace(target("apps", "v1", "Deployment", NOTIFIER),
                         [("/spec/template/spec/containers/0/args", notifier_args(settings, global_view))]))
    return found
