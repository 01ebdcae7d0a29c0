"""`vigil rules generate --kubernetes`: one PrometheusRule object per rule group whose `spec.groups` are
exactly the Prometheus rule file's groups, and those groups pass the real `promtool check rules`."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest
import yaml
from click.testing import CliRunner

from vigil import rules
from vigil.cli import main
from vigil.rules.kubernetes import dump_yaml_documents, object_name, prometheus_rules

DNS_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


def test_the_objects_carry_the_rule_files_groups_and_valid_metadata(tmp_path):
    result = CliRunner().invoke(main, ["rules", "generate", "-o", str(tmp_path), "--kubernetes", "--namespace",
                                       "monitoring", "--k8s-label", "release=prometheus", "--max-for", "5s"])
    assert result.exit_code == 0, result.output
    objects = list(yaml.safe_load_all((tmp_path / "prometheus-rules.k8s.yml").read_text()))
    rule_file = yaml.safe_load((tmp_path / "vigil-rules.yml").read_text())
    assert [group for obj in objects for group in obj["spec"]["groups"]] == rule_file["groups"]
    for obj in objects:
        assert obj["apiVersion"] == "monitoring.coreos.com/v1" and obj["kind"] == "PrometheusRule"
        assert set(obj) == {"apiVersion", "kind", "metadata", "spec"}
        meta = obj["metadata"]
        assert DNS_NAME.match(meta["name"]) and meta["name"] == obj["spec"]["groups"][0]["name"]
        assert meta["namespace"] == "monitoring"
        assert meta["labels"] == {"app.kubernetes.io/part-of": "vigil",
                                  "app.kubernetes.io/managed-by": "vigil-rules-generate", "release": "prometheus"}
    assert len({obj["metadata"]["name"] for obj in objects}) == len(objects) == len(rule_file["groups"])


@pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool is not installed")
def test_promtool_accepts_the_groups_extracted_from_the_objects(tmp_path):
    text = dump_yaml_documents(prometheus_rules(rules.load_specs(rules.default_spec_paths())))
    groups = [group for obj in yaml.safe_load_all(text) for group in obj["spec"]["groups"]]
    path = tmp_path / "extracted.yml"
    path.write_text(rules.dump_yaml({"groups": groups}))
    proc = subprocess.run(["promtool", "check", "rules", str(path)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"SUCCESS: {sum(len(g['rules']) for g in groups)} rules found" in proc.stdout


def test_object_names_follow_kubernetes_naming_rules():
    assert object_name("vigil-gpu") == "vigil-gpu"
    assert object_name("My_Team.Rules") == "my-team-rules"
    with pytest.raises(ValueError):
        object_name("__")
