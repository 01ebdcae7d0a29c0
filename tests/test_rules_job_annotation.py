"""The `job` annotation of alerts about one GPU: generated on them (not on alerts that carry the job as a
label), and filled by Prometheus itself (promtool) with the job holding the GPU and its owner."""

from __future__ import annotations

import subprocess

import yaml

import vigil.rules as rulegen
from vigil.common import job_annotation
from vigil.rules.generate import prometheus_rule_file


def test_the_generated_rules_carry_it_on_gpu_alerts_only():
    doc = prometheus_rule_file(rulegen.load_specs(rulegen.default_spec_paths()))
    annotated = {rule["alert"] for group in doc["groups"] for rule in group["rules"]
                 if job_annotation.ANNOTATION in rule.get("annotations", {})}
    assert {"GpuFallenOffBus", "GpuUncorrectableEccErrors", "GpuOverheating", "GpuCriticalXid"} <= annotated
    assert not {"JobGpuXid", "JobHung", "GpuNodeDown", "NodeDown"} & annotated  # a job label, or no GPU
    bare = prometheus_rule_file(rulegen.load_specs(rulegen.default_spec_paths()), symptoms=False)
    assert not any(job_annotation.ANNOTATION in rule.get("annotations", {})
                   for group in bare["groups"] for rule in group["rules"])  # what `vigil rules test` checks


def test_prometheus_fills_it_with_the_job_on_the_gpu_and_its_owner(tmp_path):
    rules = {"groups": [{"name": "t", "rules": [{"alert": "GpuDown", "expr": "vigil_gpu_up == 0",
                                                 "annotations": {"job": job_annotation.template()}}]}]}
    (tmp_path / "rules.yml").write_text(yaml.safe_dump(rules))
    series = [('vigil_gpu_up{node="node-1",gpu="0"}', "0x3"), ('vigil_gpu_up{node="node-1",gpu="1"}', "0x3"),
              ('vigil_gpu_job{node="node-1",gpu="0",uuid="GPU-1",job_id="57431500"}', "1x3"),
              ('vigil_job_info{job_id="57431500",user="bob",tenant="vision",source="slurm"}', "1x3")]
    test = {"rule_files": ["rules.yml"], "evaluation_interval": "1m", "tests": [{
        "interval": "1m", "input_series": [{"series": s, "values": v} for s, v in series],
        "alert_rule_test": [{"eval_time": "2m", "alertname": "GpuDown", "exp_alerts": [
            {"exp_labels": {"node": "node-1", "gpu": "0"}, "exp_annotations": {"job": "57431500 (owner bob)"}},
            {"exp_labels": {"node": "node-1", "gpu": "1"}, "exp_annotations": {"job": ""}}]}]}]}
    (tmp_path / "test.yml").write_text(yaml.safe_dump(test))
    result = subprocess.run(["promtool", "test", "rules", "test.yml"], cwd=tmp_path, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
