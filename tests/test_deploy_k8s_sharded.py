"""The Kubernetes manifests with VictoriaMetrics and a sharded Prometheus (docs/deploy.md, Long-term store
and Sharded layout): the large overlay's rules split between the shards' PrometheusRules and vmalert, the
two halves together the generated catalog; one AIOps service per shard, each reading its own shard; the
global readers (Grafana, the notifier, vmalert) on VictoriaMetrics; every in-cluster URL reachable
through the Services and NetworkPolicies; the new containers probed, sized and hardened."""

from __future__ import annotations

import copy
import shutil
import subprocess
from collections import Counter

import yaml

from vigil.deploy.k8s.checks import pods_of, problems
from vigil.deploy.k8s.reach import connections
from vigil.deploy.k8s.reach import problems as reach_problems
from vigil.rules.catalog import CATALOG_PATH, read_catalog_file
from vigil.rules.shard_split import split_rule_file

from test_deploy_kubernetes import GOLDEN_RULES, one

SHARD_POD_LABEL = "operator.prometheus.io/shard"  # what prometheus-operator puts on a shard's pods
VM_URL = "http://vigil-victoria-metrics.vigil.svc:8428"


def _rule_names(groups: list[dict]) -> list[tuple[str, str]]:
    return [(g["name"], r.get("record") or r["alert"]) for g in groups for r in g["rules"]]


def _arg(container: dict, flag: str) -> str:
    return container["args"][container["args"].index(flag) + 1]


def _flags(container: dict, name: str) -> list[str]:
    return [a.split("=", 1)[1] for a in container["args"] if a.startswith(f"-{name}=")]


def _vmalert_rule_file(objects: list[dict]) -> tuple[str, dict]:
    deployment = one(objects, "Deployment", "vigil-vmalert")
    pod = deployment["spec"]["template"]["spec"]
    [container] = pod["containers"]
    [rules_glob] = _flags(container, "rule")
    [mount] = container["volumeMounts"]
    [volume] = [v for v in pod["volumes"] if v["name"] == mount["name"]]
    [item] = volume["configMap"]["items"]
    assert rules_glob == f"{mount['mountPath']}/*.yaml" and item["path"].endswith(".yaml")
    text = one(objects, "ConfigMap", volume["configMap"]["name"])["data"][item["key"]]
    return text, yaml.safe_load(text)


def test_vmalert_runs_the_global_half_and_the_shards_the_local_half_of_the_catalog(rendered):
    golden = yaml.safe_load(GOLDEN_RULES.read_text())
    aiops_series = tuple(read_catalog_file(CATALOG_PATH)["vigil AIOps"])
    local, global_, reasons = split_rule_file(golden, global_metrics=aiops_series)
    large = rendered["large"]
    _, vmalert_rules = _vmalert_rule_file(large)
    shard_groups = [g for o in large if o["kind"] == "PrometheusRule" for g in o["spec"]["groups"]]
    assert vmalert_rules == global_
    assert shard_groups == local["groups"]
    # together, each rule of the catalog once, in its group, with the group's interval
    both = Counter(_rule_names(shard_groups) + _rule_names(vmalert_rules["groups"]))
    assert both == Counter(_rule_names(golden["groups"])) and max(both.values()) == 1
    intervals = {g["name"]: g.get("interval") for g in golden["groups"]}
    assert all(intervals[g["name"]] == g.get("interval") for g in shard_groups + vmalert_rules["groups"])
    # what cannot run on a shard is in vmalert: fleet-wide aggregations, absent() guards, the AIOps joins
    global_names = {name for _, name in _rule_names(vmalert_rules["groups"])}
    assert {"GpuExporterAbsent", "Watchdog", "GpuLoadOutsideBaseline", "GpuFailureRiskHigh"} <= global_names
    # the AIOps joins are the baseline records (baselines.yaml, baselines_upper.yaml); the alert reads them
    assert {"gpu:vigil_gpu_utilization_ratio:below_baseline", "gpu:vigil_gpu_utilization_ratio:above_baseline"} <= global_names
    assert "reads vigil_baseline" in reasons["gpu:vigil_gpu_utilization_ratio:below_baseline"]
    assert "reads the global record gpu:vigil_gpu_utilization_ratio:" in reasons["GpuLoadOutsideBaseline"]
    # the small overlay (one shard) keeps every rule in Prometheus and runs no vmalert
    small_groups = [g for o in rendered["small"] if o["kind"] == "PrometheusRule" for g in o["spec"]["groups"]]
    assert small_groups == golden["groups"]
    assert not [o for o in rendered["small"] if o["metadata"]["name"] == "vigil-vmalert"]


def test_vmalert_itself_accepts_the_generated_rule_file(rendered, tmp_path):
    assert shutil.which("vmalert"), "vmalert (Debian's victoria-metrics, Makefile DEB_PACKAGES) is a test dependency"
    text, _ = _vmalert_rule_file(rendered["large"])
    good = tmp_path / "rules.yaml"
    good.write_text(text)
    result = subprocess.run(["vmalert", "-dryRun", f"-rule={good}"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
    broken = tmp_path / "broken.yaml"  # the same file with one expression cut short: the dry run must fail
    doc = yaml.safe_load(text)
    doc["groups"][0]["rules"][0]["expr"] = doc["groups"][0]["rules"][0]["expr"] + " and on ("
    broken.write_text(yaml.safe_dump(doc))
    result = subprocess.run(["vmalert", "-dryRun", f"-rule={broken}"], capture_output=True, text=True, timeout=60)
    assert result.returncode != 0


def test_each_aiops_service_reads_its_own_shard(rendered):
    large = rendered["large"]
    shards = one(large, "Prometheus", "vigil")["spec"]["shards"]
    aiops = [o for o in large if o["kind"] == "Deployment"
             and o["spec"]["template"]["metadata"]["labels"]["app.kubernetes.io/name"] == "vigil-aiops"]
    assert len(aiops) == shards == 4
    read = []
    for deployment in aiops:
        shard = deployment["spec"]["template"]["metadata"]["labels"]["vigil.dev/prometheus-shard"]
        [container] = deployment["spec"]["template"]["spec"]["containers"]
        host = _arg(container, "--prometheus-url").removeprefix("http://").split(".")[0]
        assert one(large, "Service", host)["spec"]["selector"][SHARD_POD_LABEL] == shard
        assert _arg(container, "--query-url") == VM_URL  # its answers to questions: the whole fleet
        read.append(shard)
        # its own Service and ServiceMonitor, selecting its pods only
        own = deployment["spec"]["template"]["metadata"]["labels"]
        services = [s for s in large if s["kind"] == "Service"
                    and all(own.get(k) == v for k, v in s["spec"]["selector"].items())]
        assert [s["metadata"]["name"] for s in services] == [deployment["metadata"]["name"]]
        [monitor] = [m for m in large if m["kind"] == "ServiceMonitor"
                     and m["spec"]["selector"]["matchLabels"].items() <= services[0]["metadata"]["labels"].items()]
        assert monitor["spec"]["endpoints"][0]["relabelings"][0]["replacement"] == "vigil-aiops"
    assert sorted(read) == [str(i) for i in range(shards)]  # every shard, none twice
    # the shard Services select the operator's pods of that shard and no other
    for shard in range(shards):
        chosen = [p for p in pods_of(large) if all(p.labels.get(k) == v for k, v in
                                                    one(large, "Service", f"vigil-prometheus-shard-{shard}")["spec"]["selector"].items())]
        assert [p.labels[SHARD_POD_LABEL] for p in chosen] == [str(shard)]
    # one shard: the base's single AIOps service, on the whole Prometheus
    [single] = [o for o in rendered["small"] if o["kind"] == "Deployment" and "aiops" in o["metadata"]["name"]]
    assert _arg(single["spec"]["template"]["spec"]["containers"][0], "--prometheus-url") == \
        "http://vigil-prometheus.vigil.svc:9090"
    assert "--query-url" not in single["spec"]["template"]["spec"]["containers"][0]["args"]


def test_a_shard_service_with_no_such_shard_and_a_missing_governing_service_are_caught(rendered):
    objects = copy.deepcopy(rendered["large"])
    one(objects, "Service", "vigil-prometheus-shard-3")["spec"]["selector"][SHARD_POD_LABEL] = "4"
    one(objects, "StatefulSet", "vigil-victoria-metrics")["spec"]["serviceName"] = "gone"
    found = "\n".join(problems(objects))
    assert "Service/vigil-prometheus-shard-3: selector" in found
    assert "StatefulSet/vigil-victoria-metrics: governing Service 'gone' does not exist" in found


def test_the_global_readers_use_victoria_metrics_and_prometheus_writes_to_it_once(rendered):
    large = rendered["large"]
    datasources = yaml.safe_load(one(large, "ConfigMap", "vigil-grafana-provisioning")["data"]["datasources.yaml"])
    assert datasources["datasources"][0]["url"] == VM_URL
    notifier = one(large, "Deployment", "vigil-notifier")["spec"]["template"]["spec"]["containers"][0]
    assert _arg(notifier, "--prometheus-url") == VM_URL
    for objects in rendered.values():
        spec = one(objects, "Prometheus", "vigil")["spec"]
        [write] = spec["remoteWrite"]
        assert write["url"] == f"{VM_URL}/api/v1/write"
        # the replica label is what tells the HA pair apart; dropped, both write one series
        assert {"action": "labeldrop", "regex": spec["replicaExternalLabelName"]} in write["writeRelabelConfigs"]
        [vm] = one(objects, "StatefulSet", "vigil-victoria-metrics")["spec"]["template"]["spec"]["containers"]
        assert _flags(vm, "dedup.minScrapeInterval") == [spec["scrapeInterval"]]
        assert vm["image"].startswith("victoriametrics/victoria-metrics:v1.")
    [vmalert] = one(large, "Deployment", "vigil-vmalert")["spec"]["template"]["spec"]["containers"]
    assert vmalert["image"].removeprefix("victoriametrics/vmalert") == vm["image"].removeprefix(
        "victoriametrics/victoria-metrics")
    assert _flags(vmalert, "datasource.url") == _flags(vmalert, "remoteWrite.url") == \
        _flags(vmalert, "remoteRead.url") == [VM_URL]
    replicas = one(large, "Alertmanager", "vigil")["spec"]["replicas"]
    assert len(set(_flags(vmalert, "notifier.url"))) == replicas == 3


def _reached(objects: list[dict]) -> set[tuple[str, str]]:
    return {(c.source, target) for c in connections(objects) if not c.problem for target in c.targets}


def test_every_in_cluster_url_reaches_a_pod_the_network_policies_let_it_into(rendered):
    for objects in rendered.values():
        assert reach_problems(objects) == []
    large = _reached(rendered["large"])
    assert {("Deployment/vigil-vmalert", "StatefulSet/vigil-victoria-metrics"),
            ("Deployment/vigil-vmalert", "Alertmanager/vigil"),
            ("Prometheus/vigil", "StatefulSet/vigil-victoria-metrics"),
            ("Deployment/vigil-grafana", "StatefulSet/vigil-victoria-metrics"),
            ("Deployment/vigil-aiops-shard-2", "Prometheus/vigil"),
            ("Deployment/vigil-aiops-shard-2", "StatefulSet/vigil-victoria-metrics")} <= large
    assert ("Prometheus/vigil", "StatefulSet/vigil-victoria-metrics") in _reached(rendered["small"])


def test_the_reach_check_finds_a_missing_policy_port_and_service(rendered):
    objects = copy.deepcopy(rendered["large"])
    objects.remove(one(objects, "NetworkPolicy", "vigil-alertmanager-vmalert-ingress"))
    one(objects, "NetworkPolicy", "vigil-victoria-metrics-ingress")["spec"]["ingress"][0]["ports"][0]["port"] = 8429
    objects.remove(one(objects, "Service", "vigil-prometheus-shard-1"))
    found = "\n".join(reach_problems(objects))
    assert ("Deployment/vigil-vmalert → http://alertmanager-vigil-0.alertmanager-operated.vigil.svc:9093: "
            "no NetworkPolicy lets it into Alertmanager/vigil") in found
    assert "Prometheus/vigil → http://vigil-victoria-metrics.vigil.svc:8428: no NetworkPolicy" in found
    assert "Deployment/vigil-aiops-shard-1 → http://vigil-prometheus-shard-1.vigil.svc:9090: Service " \
           "'vigil-prometheus-shard-1' does not exist" in found
    assert "vigil-vmalert → http://vigil-victoria-metrics" not in found  # its own policy still admits it


def test_the_new_containers_are_probed_sized_and_restricted(rendered):
    large = rendered["large"]
    new = [one(large, "StatefulSet", "vigil-victoria-metrics"), one(large, "Deployment", "vigil-vmalert"),
           *[one(large, "Deployment", f"vigil-aiops-shard-{i}") for i in range(4)]]
    for workload in new:
        pod = workload["spec"]["template"]["spec"]
        for container in pod["containers"]:
            for probe in ("readinessProbe", "livenessProbe"):
                assert container[probe]["httpGet"]["path"] in ("/health", "/healthz", "/metrics")
            assert container["resources"]["requests"] and container["resources"]["limits"]
            security = container["securityContext"]
            assert security["runAsNonRoot"] and security["readOnlyRootFilesystem"]
            assert security["capabilities"] == {"drop": ["ALL"]} and security["allowPrivilegeEscalation"] is False
        assert pod["automountServiceAccountToken"] is False
    names = {o["metadata"]["name"] for o in large if o["kind"] == "PodDisruptionBudget"}
    assert {"vigil-victoria-metrics", "vigil-vmalert", "vigil-aiops"} <= names
    [claim] = one(large, "StatefulSet", "vigil-victoria-metrics")["spec"]["volumeClaimTemplates"]
    assert claim["spec"]["resources"]["requests"]["storage"] == "2Ti"
    assert one(rendered["small"], "StatefulSet", "vigil-victoria-metrics")["spec"]["volumeClaimTemplates"][0][
        "spec"]["resources"]["requests"]["storage"] == "100Gi"
    assert problems(large) == []
