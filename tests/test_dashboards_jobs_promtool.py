"""The job and team panels computed by the real Prometheus engine (`promtool test rules`, with vigil's own
generated recording rules) on a small fleet with known answers: the demo runs no job yet, so this is
where the join of the hardware metrics with `vigil_gpu_job` and `vigil_job_info` is proven."""

from __future__ import annotations

import subprocess

import pytest

from vigil.dashboards.build import dashboard_models
from vigil.dashboards.check import expand, panels
from vigil.rules import default_spec_paths, dump_yaml, load_specs, prometheus_rule_file
from vigil.rules.promtool import PromtoolMissing, find_promtool

# (node, gpu) -> (job holding it or None, utilization, power W)
GPUS = {("n1", "0"): ("j1", 0.8, 300), ("n1", "1"): ("j1", 0.6, 200), ("n2", "0"): ("j2", 0.01, 90),
        ("n2", "1"): (None, 0.9, 350)}
TEAMS = {"j1": "llm", "j2": "vision"}


def _series() -> list[dict]:
    found = []
    for (node, gpu), (job, utilization, power) in GPUS.items():
        gpu_labels = f'node="{node}", gpu="{gpu}", uuid="GPU-{node}-{gpu}", instance="{node}:9400", job="vigil-gpu"'
        found += [{"series": f"vigil_gpu_utilization_ratio{{{gpu_labels}}}", "values": f"{utilization}x10"},
                  {"series": f"vigil_gpu_power_watts{{{gpu_labels}}}", "values": f"{power}x10"}]
        if job:
            found.append({"series": f'vigil_gpu_job{{{gpu_labels}, job_id="{job}"}}', "values": "1x10"})
    for job, team in TEAMS.items():  # j1 is reported by the exporters of two nodes: the join must not double it
        for instance in (("n1:9400", "n2:9400") if job == "j1" else ("n2:9400",)):
            found.append({"series": f'vigil_job_info{{job_id="{job}", tenant="{team}", user="u", source="slurm", '
                                    f'instance="{instance}", job="vigil-gpu"}}', "values": "1x10"})
    return found


def _query(uid: str, title: str, ref: str = "A", **values: str) -> str:
    model = next(m for m in dashboard_models() if m["uid"] == uid)
    target = next(t for p in panels(model) if p.get("title") == title for t in p.get("targets", [])
                  if t["refId"] == ref)
    return expand(target["expr"], values, {"__rate_interval": "2m", "__range": "5m", "__interval": "1m",
                                           "__range_s": "300"})[0]


def test_job_and_team_panels_give_the_known_answers(tmp_path):
    try:
        promtool = find_promtool()
    except PromtoolMissing as exc:
        pytest.skip(str(exc))
    (tmp_path / "rules.yml").write_text(dump_yaml(prometheus_rule_file(load_specs(default_spec_paths()))))
    expected = [
        (_query("vigil-job", "GPUs", job_id="j1"), [({}, 2)]),
        (_query("vigil-job", "Nodes", job_id="j1"), [({}, 1)]),
        (_query("vigil-job", "Average utilization", job_id="j1"), [({"__name__": "job:vigil_gpu_utilization:avg", "job_id": "j1"}, 0.7)]),
        (_query("vigil-job", "Utilization and profiling", job_id="j1"), [({}, 0.7)]),
        (_query("vigil-job", "Power", job_id="j1"), [({}, 500)]),
        (_query("vigil-fleet", "GPUs allocated by team"), [({"tenant": "llm"}, 2), ({"tenant": "vision"}, 1)]),
        # llm's GPUs all compute: 0, not left out
        (_query("vigil-fleet", "Allocated GPUs idle by team"), [({"tenant": "llm"}, 0), ({"tenant": "vision"}, 1)]),
        (_query("vigil-fleet", "GPUs allocated vs. idle", "A"), [({}, 3)]),
        (_query("vigil-fleet", "GPUs allocated vs. idle", "B"), [({}, 1)]),
        # the fleet's Jobs table, one row per job: its GPUs over all its nodes
        (_query("vigil-fleet", "Jobs", "A"), [({"job_id": "j1"}, 2), ({"job_id": "j2"}, 1)]),
    ]
    tests = {"rule_files": ["rules.yml"], "evaluation_interval": "1m", "tests": [{
        "interval": "1m", "input_series": _series(),
        "promql_expr_test": [{"expr": expr, "eval_time": "8m", "exp_samples": [
            {"labels": "{" + ", ".join(f'{k}="{v}"' for k, v in labels.items()) + "}", "value": value}
            for labels, value in samples]} for expr, samples in expected]}]}
    (tmp_path / "dashboards_test.yml").write_text(dump_yaml(tests))
    proc = subprocess.run([promtool, "test", "rules", "dashboards_test.yml"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
