"""Every object of both overlays against the schemas, offline: the Kubernetes API objects with
kubernetes-validate (Kubernetes 1.32, strict: an unknown field is an error), the prometheus-operator
objects with cloudcoil's pydantic models generated from the operator's CRDs (0.80). The models ignore
unknown fields, so an object must also come back unchanged from a validate → dump round trip: a field
the CRD does not have is dropped by the model and shows as a difference."""

from __future__ import annotations

import copy

import pytest
from cloudcoil.models.prometheus_operator import v1 as operator
from kubernetes_validate.utils import SchemaNotFoundError, ValidationError, validate
from pydantic import ValidationError as ModelError

from vigil.deploy.k8s import DEFAULT_OUTPUT, KUBERNETES_VERSION
from vigil.deploy.k8s.kustomize import render_overlay

OPERATOR_GROUP = "monitoring.coreos.com/v1"


@pytest.fixture(scope="module")
def objects() -> list[dict]:
    return [obj for size in ("small", "large") for obj in render_overlay(DEFAULT_OUTPUT / "overlays" / size)]


def kubernetes_problem(obj: dict) -> str | None:
    try:
        validate(obj, f"{KUBERNETES_VERSION}.0", strict=True)
    except ValidationError as error:
        return f"{obj['kind']}/{obj['metadata']['name']} at {'/'.join(map(str, error.path))}: {error.message}"
    return None


def _differences(sent, back, path: str = ""):
    if isinstance(sent, dict) and isinstance(back, dict):
        for key in sent.keys() | back.keys():
            if key not in back:
                yield f"{path}/{key}: not in the CRD (dropped)"
            elif key not in sent:
                yield f"{path}/{key}: added as {back[key]!r}"
            else:
                yield from _differences(sent[key], back[key], f"{path}/{key}")
    elif isinstance(sent, list) and isinstance(back, list) and len(sent) == len(back):
        for index, (a, b) in enumerate(zip(sent, back)):
            yield from _differences(a, b, f"{path}/{index}")
    elif sent != back:
        yield f"{path}: {sent!r} came back as {back!r}"


def operator_problems(obj: dict) -> list[str]:
    name = f"{obj['kind']}/{obj['metadata']['name']}"
    try:
        model = getattr(operator, obj["kind"]).model_validate(obj)
    except ModelError as error:
        return [f"{name}: {error}"]
    back = model.model_dump(mode="json", by_alias=True, exclude_unset=True)
    return [f"{name} {difference}" for difference in _differences(obj, back)]


def test_every_kubernetes_object_validates_strictly_against_the_api_schemas(objects):
    builtin = [obj for obj in objects if obj["apiVersion"] != OPERATOR_GROUP]
    assert {"DaemonSet", "Deployment", "Service", "Secret", "ConfigMap", "NetworkPolicy", "PodDisruptionBudget",
            "ClusterRole", "ClusterRoleBinding", "ServiceAccount", "Namespace"} <= {obj["kind"] for obj in builtin}
    assert [problem for obj in builtin if (problem := kubernetes_problem(obj))] == []


def test_every_prometheus_operator_object_validates_against_the_crd_models(objects):
    custom = [obj for obj in objects if obj["apiVersion"] == OPERATOR_GROUP]
    assert {obj["kind"] for obj in custom} == {"Alertmanager", "Prometheus", "PrometheusRule", "ServiceMonitor",
                                               "PodMonitor"}
    assert [problem for obj in custom for problem in operator_problems(obj)] == []


def test_the_validators_reject_an_unknown_field_and_a_wrong_value(objects):
    daemonset = copy.deepcopy(next(obj for obj in objects if obj["kind"] == "DaemonSet"))
    daemonset["spec"]["template"]["spec"]["containers"][0]["securityContext"]["privileged_"] = True
    assert "'privileged_' was unexpected" in kubernetes_problem(daemonset)
    with pytest.raises(SchemaNotFoundError):  # so the operator's kinds need the CRD models
        validate(next(obj for obj in objects if obj["kind"] == "Prometheus"), f"{KUBERNETES_VERSION}.0", strict=True)
    monitor = copy.deepcopy(next(obj for obj in objects if obj["kind"] == "ServiceMonitor"))
    monitor["spec"]["endpoints"][0]["scrape_interval"] = "15s"
    assert any("scrape_interval: not in the CRD" in problem for problem in operator_problems(monitor))
    prometheus = copy.deepcopy(next(obj for obj in objects if obj["kind"] == "Prometheus"))
    prometheus["spec"]["scrapeInterval"] = "every 15 seconds"
    assert "scrapeInterval" in "".join(operator_problems(prometheus))
