"""The generated rules as Kubernetes `PrometheusRule` objects (prometheus-operator, monitoring.coreos.com/v1).

One object per rule group (one spec file), built from the very group documents of the Prometheus rule
file (`rules.prometheus_rule_file`), so `spec.groups` of the objects equal the rule file's `groups`.
`dump_yaml_documents` writes them as one multi-document YAML stream for `kubectl apply -f`.
"""

from __future__ import annotations

import re

from .dump import dump_yaml
from .generate import prometheus_rule_file
from .model import RuleSet

API_VERSION = "monitoring.coreos.com/v1"
KIND = "PrometheusRule"
PART_OF = {"app.kubernetes.io/part-of": "vigil", "app.kubernetes.io/managed-by": "vigil-rules-generate"}
_NOT_DNS = re.compile(r"[^a-z0-9-]+")
_MAX_NAME = 253


def object_name(group_name: str) -> str:
    """A group name as a Kubernetes object name (RFC 1123 subdomain: lower case, digits, `-`)."""
    name = _NOT_DNS.sub("-", group_name.lower()).strip("-")[:_MAX_NAME].strip("-")
    if not name:
        raise ValueError(f"rule group {group_name!r} gives no valid Kubernetes object name")
    return name


def prometheus_rules(ruleset: RuleSet, *, namespace: str | None = None, labels: dict[str, str] | None = None,
                     max_for_seconds: float | None = None) -> list[dict]:
    """One `PrometheusRule` per rule group; `labels` are added to every object's metadata (the operator's
    `ruleSelector` matches them, e.g. `release: prometheus`)."""
    objects = []
    for group in prometheus_rule_file(ruleset, max_for_seconds=max_for_seconds)["groups"]:
        metadata: dict = {"name": object_name(group["name"])}
        if namespace:
            metadata["namespace"] = namespace
        metadata["labels"] = {**PART_OF, **(labels or {})}
        objects.append({"apiVersion": API_VERSION, "kind": KIND, "metadata": metadata, "spec": {"groups": [group]}})
    names = [o["metadata"]["name"] for o in objects]
    clashes = sorted({n for n in names if names.count(n) > 1})
    if clashes:
        raise ValueError(f"rule groups map to the same Kubernetes object name: {', '.join(clashes)}")
    return objects


def dump_yaml_documents(objects: list[dict]) -> str:
    """The objects as a YAML stream (`---` between documents), each dumped by `rules.dump_yaml`."""
    return "---\n" + "---\n".join(dump_yaml(obj) for obj in objects)
