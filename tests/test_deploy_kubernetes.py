"""`vigil deploy kubernetes build`: the checked-in deploy/kubernetes equals the generator's output; the
overlays render (kubectl's kustomize where installed, the documented Python renderer always) to objects
whose references, selectors and probe ports all resolve; the rules, Alertmanager configuration and
dashboards inside are the generated files themselves."""

from __future__ import annotations

import copy
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from vigil.cli import main
from vigil.deploy.k8s import DEFAULT_OUTPUT
from vigil.deploy.k8s import aiops_memory
from vigil.deploy.k8s.checks import problems
from vigil.deploy.k8s.kustomize import KustomizeError, kubectl, render_overlay, render_with_kubectl
from vigil.deploy.k8s.sizes import SIZES
from vigil.oncall.loader import parse_oncall

REPO = Path(__file__).resolve().parents[1]
GOLDEN_RULES = REPO / "tests" / "golden" / "rules" / "vigil-rules.yml"
DASHBOARDS = REPO / "dashboards"


def cli(*args: str):
    return CliRunner().invoke(main, ["deploy", "kubernetes", *args])


def one(objects: list[dict], kind: str, name: str) -> dict:
    [found] = [o for o in objects if o["kind"] == kind and o["metadata"]["name"] == name]
    return found


def keyed(objects: list[dict]) -> dict[tuple, dict]:
    return {(o["apiVersion"], o["kind"], o["metadata"]["name"]): o for o in objects}


def test_the_checked_in_manifests_are_the_generator_output():
    result = cli("build", "--check")
    assert result.exit_code == 0, result.output
    assert "up to date" in result.output


def test_check_names_each_file_that_differs(tmp_path):
    assert cli("build", "--out", str(tmp_path)).exit_code == 0
    assert cli("build", "--out", str(tmp_path), "--check").exit_code == 0
    (tmp_path / "base" / "notifier.yaml").write_text("edited by hand\n")
    (tmp_path / "overlays" / "large" / "kustomization.yaml").unlink()
    (tmp_path / "base" / "extra.yaml").write_text("kind: ConfigMap\n")
    result = cli("build", "--out", str(tmp_path), "--check")
    assert result.exit_code == 1
    assert "3 stale file(s)" in result.output
    for name in ("base/notifier.yaml", "overlays/large/kustomization.yaml", "base/extra.yaml (not generated any more)"):
        assert name in result.output
    assert "Traceback" not in result.output


@pytest.mark.parametrize("size", ["small", "large"])
def test_every_reference_selector_and_probe_port_of_an_overlay_resolves(rendered, size):
    objects = rendered[size]
    assert problems(objects) == []
    kinds = {o["kind"] for o in objects}
    assert {"DaemonSet", "Deployment", "StatefulSet", "Service", "ServiceMonitor", "PodMonitor", "PrometheusRule",
            "Alertmanager", "Prometheus", "Secret", "ConfigMap", "NetworkPolicy", "PodDisruptionBudget"} <= kinds


def test_the_checks_find_each_broken_reference(rendered):
    objects = copy.deepcopy(rendered["small"])
    objects.remove(one(objects, "Secret", "vigil-notifier-db"))
    one(objects, "Service", "vigil-aiops")["spec"]["selector"] = {"app.kubernetes.io/name": "nobody"}
    notifier = one(objects, "Deployment", "vigil-notifier")["spec"]["template"]["spec"]["containers"][0]
    notifier["livenessProbe"]["httpGet"]["port"] = "admin"
    one(objects, "ServiceMonitor", "vigil-notifier")["spec"]["endpoints"][0]["port"] = "metrics"
    one(objects, "Alertmanager", "vigil")["spec"]["configSecret"] = "missing"
    policy = one(objects, "NetworkPolicy", "vigil-aiops-ingress")["spec"]["ingress"][0]["from"][0]
    policy["podSelector"]["matchLabels"] = {"prometheus": "other"}
    found = "\n".join(problems(objects))
    assert "Deployment/vigil-notifier: Secret 'vigil-notifier-db' does not exist" in found
    assert "Service/vigil-aiops: selector" in found and "matches no pod" in found
    assert "livenessProbe of container notifier uses port 'admin'" in found
    assert "ServiceMonitor/vigil-notifier: port 'metrics' is not a port of Service/vigil-notifier" in found
    assert "Alertmanager/vigil: configSecret 'missing' does not exist" in found
    assert "NetworkPolicy/vigil-aiops-ingress: ingress from {'prometheus': 'other'} matches no pod" in found


@pytest.mark.skipif(kubectl() is None, reason="kubectl (with its built-in kustomize) is not installed")
@pytest.mark.parametrize("size", ["small", "large"])
def test_the_python_renderer_gives_what_kubectl_kustomize_gives(rendered, size):
    assert keyed(render_with_kubectl(DEFAULT_OUTPUT / "overlays" / size, kubectl())) == keyed(rendered[size])


def test_the_small_overlay_is_the_base_and_the_large_one_scales_it(rendered):
    base = render_overlay(DEFAULT_OUTPUT / "base")
    assert keyed(rendered["small"]) == keyed(base)
    large = rendered["large"]
    assert one(large, "Prometheus", "vigil")["spec"]["shards"] == 4
    assert one(large, "Prometheus", "vigil")["spec"]["resources"]["requests"]["memory"] == "32Gi"
    assert one(large, "Deployment", "vigil-notifier")["spec"]["replicas"] == 4
    assert one(base, "Deployment", "vigil-notifier")["spec"]["replicas"] == 2
    assert one(base, "Alertmanager", "vigil")["spec"]["replicas"] == 3


def test_aiops_memory_follows_the_measured_curve_between_and_beyond_its_points(monkeypatch):
    monkeypatch.setattr(aiops_memory, "AIOPS_PEAK_MIB", ((1_000, 200.0), (100, 100.0), (2_000, 400.0)))
    assert aiops_memory.aiops_memory_mib(10) == 100.0  # below the first point: its value
    assert aiops_memory.aiops_memory_mib(550) == pytest.approx(150.0)  # halfway from 100 to 1,000 series
    assert aiops_memory.aiops_memory_mib(1_500) == pytest.approx(300.0)
    assert aiops_memory.aiops_memory_mib(4_000) == pytest.approx(800.0)  # the last segment, extended
    # 300 MiB x 1.5 = 450 MiB, rounded up to 256 MiB steps: 512 MiB, request = limit
    assert aiops_memory.aiops_resources(1_500) == {"requests": {"cpu": "500m", "memory": "512Mi"},
                                                   "limits": {"cpu": "1000m", "memory": "512Mi"}}
    # past the last point: 800 MiB x 2 = 1,600 MiB, rounded up to 1,792 MiB
    assert aiops_memory.aiops_resources(4_000) == {"requests": {"cpu": "1000m", "memory": "1792Mi"},
                                                   "limits": {"cpu": "2000m", "memory": "1792Mi"}}


def _mib(quantity: str) -> float:
    return float(quantity[:-2]) * (1024 if quantity.endswith("Gi") else 1)


@pytest.mark.parametrize("size", ["small", "large"])
def test_every_aiops_container_holds_the_measured_peak_of_its_shard_with_headroom(rendered, size):
    deployments = [o for o in rendered[size] if o["kind"] == "Deployment" and o["metadata"]["name"].startswith("vigil-aiops")]
    assert len(deployments) == SIZES[size].prometheus_shards
    gpus = SIZES[size].gpus_per_shard
    need = aiops_memory.aiops_memory_mib(gpus) * aiops_memory.aiops_headroom(gpus)
    for deployment in deployments:
        limits = deployment["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]
        assert need <= _mib(limits["memory"]) < need + 256, (deployment["metadata"]["name"], limits)


def test_the_python_renderer_refuses_a_patch_that_does_not_apply(tmp_path):
    (tmp_path / "base").mkdir()
    (tmp_path / "base" / "kustomization.yaml").write_text("resources: [cm.yaml]\n")
    (tmp_path / "base" / "cm.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata: {a: b}\n")
    patch = {"target": {"version": "v1", "kind": "ConfigMap", "name": "x"},
             "patch": yaml.safe_dump([{"op": "replace", "path": "/data/missing", "value": "c"}])}
    (tmp_path / "kustomization.yaml").write_text(yaml.safe_dump({"resources": ["base"], "patches": [patch]}))
    with pytest.raises(KustomizeError, match="missing path /data/missing"):
        render_overlay(tmp_path)
    patch["patch"] = yaml.safe_dump([{"op": "replace", "path": "/data/a", "value": "c"}])
    (tmp_path / "kustomization.yaml").write_text(yaml.safe_dump({"resources": ["base"], "patches": [patch]}))
    assert render_overlay(tmp_path)[0]["data"] == {"a": "c"}


def test_the_prometheus_rules_are_the_generated_rule_file(rendered):
    rules = [o for o in rendered["small"] if o["kind"] == "PrometheusRule"]
    groups = [group for rule in rules for group in rule["spec"]["groups"]]
    assert groups == yaml.safe_load(GOLDEN_RULES.read_text())["groups"]
    assert all(rule["metadata"]["labels"]["app.kubernetes.io/part-of"] == "vigil" for rule in rules)
    assert one(rendered["small"], "Prometheus", "vigil")["spec"]["ruleSelector"]["matchLabels"] == \
        {"app.kubernetes.io/part-of": "vigil"}


def test_the_alertmanager_secret_is_what_vigil_rules_generates_and_amtool_accepts_it(rendered, tmp_path):
    am = one(rendered["small"], "Alertmanager", "vigil")["spec"]
    config_text = one(rendered["small"], "Secret", am["configSecret"])["stringData"]["alertmanager.yaml"]
    token_file = f"/etc/alertmanager/secrets/{am['secrets'][0]}/token"  # where the operator mounts spec.secrets
    result = CliRunner().invoke(main, [
        "rules", "generate", "--alertmanager", "-o", str(tmp_path),
        "--notifier-url", "http://vigil-notifier.vigil.svc:9095/api/v1/alerts/alertmanager", "--token-file", token_file])
    assert result.exit_code == 0, result.output
    assert yaml.safe_load(config_text) == yaml.safe_load((tmp_path / "alertmanager.yml").read_text())
    (tmp_path / "k8s.yml").write_text(config_text)
    amtool = shutil.which("amtool")
    assert amtool, "amtool (Debian's prometheus-alertmanager) is a test dependency"
    check = subprocess.run([amtool, "check-config", str(tmp_path / "k8s.yml")], capture_output=True, text=True, timeout=60)
    assert check.returncode == 0, check.stdout + check.stderr


def test_the_dashboard_config_maps_hold_the_generated_dashboards(rendered):
    maps = {o["metadata"]["name"]: o for o in rendered["small"] if o["kind"] == "ConfigMap"}
    dashboards = {key: text for m in maps.values() if m["metadata"]["labels"].get("grafana_dashboard") == "1"
                  for key, text in m["data"].items()}
    checked_in = {p.name: p.read_text(encoding="utf-8") for p in (DASHBOARDS / "json").glob("*.json")}
    assert dashboards == checked_in and len(checked_in) >= 8
    provisioning = maps["vigil-grafana-provisioning"]["data"]
    assert provisioning["dashboards.yaml"] == (DASHBOARDS / "provisioning/dashboards/vigil.yaml").read_text()
    datasource = yaml.safe_load(provisioning["datasources.yaml"])
    local = yaml.safe_load((DASHBOARDS / "provisioning/datasources/vigil.yaml").read_text())
    assert datasource["datasources"][0].pop("url") == "http://vigil-prometheus.vigil.svc:9090"
    local["datasources"][0].pop("url")
    assert datasource == local
    assert all(json.loads(text)["uid"] for text in dashboards.values())


def test_the_oncall_secret_is_a_valid_oncall_file_of_placeholders(rendered):
    secret = one(rendered["small"], "Secret", "vigil-oncall")
    text = secret["stringData"]["oncall.yaml"]
    config = parse_oncall(text, "vigil-oncall/oncall.yaml")
    assert config.people
    placeholders = [o for o in rendered["small"] if o["kind"] == "Secret"
                    and "vigil.dev/replace-before-use" in o["metadata"].get("annotations", {})]
    assert {s["metadata"]["name"] for s in placeholders} == {"vigil-webhook-token", "vigil-notifier-db", "vigil-oncall",
                                                            "vigil-grafana-admin"}
    assert "REPLACE-ME" in one(rendered["small"], "Secret", "vigil-notifier-db")["stringData"]["url"]


def _containers(objects: list[dict], kind: str, name: str) -> tuple[dict, list[dict]]:
    pod = one(objects, kind, name)["spec"]["template"]["spec"]
    return pod, pod["containers"]


def test_the_gpu_exporter_has_the_least_privileges_that_work(rendered):
    pod, [container] = _containers(rendered["small"], "DaemonSet", "vigil-gpu-exporter")
    assert pod["runtimeClassName"] == "nvidia"
    assert pod["nodeSelector"] == {"nvidia.com/gpu.present": "true"}
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in pod["tolerations"]
    security = container["securityContext"]
    assert not security.get("privileged") and security["capabilities"] == {"drop": ["ALL"]}
    assert security["readOnlyRootFilesystem"] and security["allowPrivilegeEscalation"] is False
    assert not pod.get("hostPID") and not pod.get("hostNetwork")
    [mount] = container["volumeMounts"]
    assert mount == {"name": "pod-resources", "mountPath": "/var/lib/kubelet/pod-resources", "readOnly": True}
    assert [v["hostPath"]["path"] for v in pod["volumes"]] == ["/var/lib/kubelet/pod-resources"]
    assert "--job-sources" in container["args"] and "kubernetes" in container["args"]


def test_only_the_node_health_exporter_is_privileged_and_only_node_exporter_is_on_the_host_network(rendered):
    privileged, host_network = [], []
    for obj in rendered["small"] + rendered["large"]:
        if obj["kind"] in ("Deployment", "DaemonSet", "StatefulSet"):
            pod = obj["spec"]["template"]["spec"]
            assert not pod.get("hostPID")
            if pod.get("hostNetwork"):
                host_network.append(obj["metadata"]["name"])
            for container in pod["containers"]:
                assert container["resources"]["requests"] and container["resources"]["limits"]
                if container["securityContext"].get("privileged"):
                    privileged.append(obj["metadata"]["name"])
                else:
                    assert container["securityContext"]["capabilities"] == {"drop": ["ALL"]}
                assert container["securityContext"]["readOnlyRootFilesystem"]
    assert set(privileged) == {"vigil-node-health"} and set(host_network) == {"node-exporter"}
    pod, [node_exporter] = _containers(rendered["small"], "DaemonSet", "node-exporter")
    assert {(m["mountPath"], m["readOnly"]) for m in node_exporter["volumeMounts"]} == \
        {("/host/proc", True), ("/host/sys", True), ("/host/root", True)}


@pytest.mark.skipif(kubectl() is None, reason="kubectl (with its built-in kustomize) is not installed")
def test_a_site_overlay_fills_the_secrets_as_docs_deploy_md_says(tmp_path):
    """The documented way to fill the Secrets: an overlay of your own patching them (kept out of git)."""
    overlay = Path(os.path.relpath(DEFAULT_OUTPUT / "overlays" / "large", tmp_path))
    (tmp_path / "kustomization.yaml").write_text(yaml.safe_dump({"resources": [str(overlay)],
                                                                 "patches": [{"path": "secrets.yaml"}]}))
    filled = {"vigil-webhook-token": {"token": "x" * 43}, "vigil-notifier-db": {"url": "postgresql://vigil:pw@db/vigil"}}
    (tmp_path / "secrets.yaml").write_text(yaml.safe_dump_all(
        [{"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "namespace": "vigil"}, "stringData": data}
         for name, data in filled.items()]))
    objects = render_with_kubectl(tmp_path, kubectl())
    for name, data in filled.items():
        assert one(objects, "Secret", name)["stringData"] == data
    assert "REPLACE-ME" in one(objects, "Secret", "vigil-grafana-admin")["stringData"]["password"]
    assert problems(objects) == []
