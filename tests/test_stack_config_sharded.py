"""The sharded profile's generated files and components: promtool accepts every shard's config and vmalert
the global rules; each node target is kept by the shard `shard_of` predicts and only there; the host
node's exporters and each AIOps service go with their shard; the rule file is split without loss; ports
are distinct and the settings and the CLI refuse what the port range cannot hold."""

from __future__ import annotations

import fcntl
import os
import re
import subprocess

import pytest
import yaml

from stack_support import vigil
from vigil.stack.components import GpuBackend
from vigil.stack.components_sharded import scraped_jobs, sharded_component_specs
from vigil.stack.settings import SettingsError, load_settings
from vigil.stack.config import RunLayout, write_stack_files
from vigil.stack.config.sharded import AIOPS_JOB, ShardedLayout, ShardedTopology
from vigil.stack.config.sharding import SHARD_LABEL, shard_of

BINARIES = {"prometheus": "prometheus", "promtool": "promtool", "alertmanager": "alertmanager", "amtool": "amtool",
            "node-exporter": "node_exporter", "victoria-metrics": "victoria-metrics", "vmalert": "vmalert"}


def generate(tmp_path, nodes: int = 6, shards: int | None = 3, **overrides):
    settings = load_settings(None, {"run_dir": tmp_path / "run", "sim_nodes": nodes, "profile": "sharded",
                                    "shards": shards, **overrides})  # load_settings drops a None
    layout = RunLayout(settings.run_path)
    write_stack_files(settings, layout, [f"node-{i}" for i in range(1, nodes + 1)])
    return settings, layout


def shard_configs(settings, layout) -> list[dict]:
    return [yaml.safe_load(ShardedLayout(layout).prometheus_config(i).read_text()) for i in range(settings.shards)]


def kept_targets(config: dict, job_name: str) -> list[str]:
    """The targets of `job_name` this shard keeps, as Prometheus' hashmod would decide (`shard_of`)."""
    shards, shard = None, int(config["global"]["external_labels"][SHARD_LABEL])
    for job in config["scrape_configs"]:
        if job["job_name"] != job_name:
            continue
        for rule in job.get("relabel_configs", []):
            shards = rule.get("modulus", shards)
        targets = [t for group in job["static_configs"] for t in group["targets"]]
        return [t for t in targets if shards is None or shard_of(t, shards) == shard]
    return []


def test_every_shard_passes_promtool_and_vmalert_accepts_the_global_rules(tmp_path):
    settings, layout = generate(tmp_path)
    sharded = ShardedLayout(layout)
    for shard in range(settings.shards):
        result = subprocess.run(["promtool", "check", "config", str(sharded.prometheus_config(shard))],
                                capture_output=True, text=True)
        assert result.returncode == 0, result.stdout + result.stderr
    result = subprocess.run(["vmalert", "-dryRun", f"-rule={sharded.global_rules}"], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]


def test_each_node_target_is_kept_by_exactly_one_shard_the_one_shard_of_predicts(tmp_path):
    settings, layout = generate(tmp_path, nodes=12, shards=3)
    topology = ShardedTopology(settings)
    kept = [kept_targets(config, "vigil-gpu") for config in shard_configs(settings, layout)]
    every = [topology.gpu_address(i) for i in range(1, 13)]
    assert sorted(t for part in kept for t in part) == sorted(every)
    for shard, part in enumerate(kept):
        assert part == [t for t in every if shard_of(t, 3) == shard]


def test_host_exporters_go_with_the_host_node_and_each_aiops_service_with_its_shard(tmp_path):
    settings, layout = generate(tmp_path)
    topology = ShardedTopology(settings)
    for shard, config in enumerate(shard_configs(settings, layout)):
        jobs = {job["job_name"] for job in config["scrape_configs"]}
        host = shard == topology.host_shard
        assert ({"node-exporter", "vigil-node-health"} <= jobs) == host
        assert not {"node-exporter", "vigil-node-health"} & jobs or host
        assert kept_targets(config, AIOPS_JOB) == [topology.address(topology.aiops_ports()[shard])]
        assert ({"alertmanager", "vigil-notifier", "victoria-metrics"} <= jobs) == (shard == 0)
        assert config["remote_write"][0]["url"].endswith("/api/v1/write")
    assert topology.host_shard == shard_of(topology.gpu_address(1), settings.shards)


def test_the_rules_are_split_between_the_shards_and_vmalert_without_loss(tmp_path):
    settings, layout = generate(tmp_path)
    local = yaml.safe_load((layout.rules_dir / "vigil-rules.yml").read_text())
    global_ = yaml.safe_load(ShardedLayout(layout).global_rules.read_text())

    def names(doc: dict) -> set[str]:
        return {r.get("alert") or r["record"] for g in doc["groups"] for r in g["rules"]}

    assert names(local).isdisjoint(names(global_))
    assert {"Watchdog", "GpuExporterAbsent", "NotifierAbsent"} <= names(global_)
    assert {"GpuFallenOffBus", "AiopsServiceDown", "GpuLoadOutsideBaseline"} <= names(local)
    _, single = generate(tmp_path / "single", profile="single", shards=None)
    assert names(yaml.safe_load((single.rules_dir / "vigil-rules.yml").read_text())) == names(local) | names(global_)


def test_components_have_distinct_ports_vmalert_starts_last_and_shard_0_after_the_others(tmp_path):
    settings, layout = generate(tmp_path, nodes=4, shards=5)
    specs = sharded_component_specs(settings, layout, BINARIES, GpuBackend("sim", [f"node-{i}" for i in range(1, 5)]))
    ports = [p for spec in specs for p in spec.ports]
    assert len(ports) == len(set(ports)) and all(settings.port_base <= p <= settings.port_base + 99 for p in ports)
    names = [spec.name for spec in specs]
    assert names[0] == "victoria-metrics" and names[-1] == "vmalert"
    shards = [n for n in names if n.startswith("prometheus")]
    assert shards == ["prometheus-4", "prometheus-3", "prometheus-2", "prometheus-1", "prometheus"]
    aiops = {spec.name: spec.argv[spec.argv.index("--prometheus-url") + 1] for spec in specs if spec.name.startswith("aiops")}
    assert aiops == {("aiops" if i == 0 else f"aiops-{i}"): f"http://127.0.0.1:{p}"
                     for i, p in enumerate(ShardedTopology(settings).prometheus_ports())}


def test_the_settings_refuse_one_shard_too_many_shards_and_nodes_over_the_ports(tmp_path):
    for overrides, message in (({"shards": 1}, "shards"), ({"shards": 6}, "shards"),
                               ({"shards": 2, "sim_nodes": 80}, "at most 79 simulated nodes")):
        with pytest.raises(SettingsError, match=message):
            load_settings(None, {"profile": "sharded", **overrides})


@pytest.mark.parametrize("args, code, message", [
    (("--profile", "sharded", "--shards", "1"), 2, "Invalid value for '--shards': 1 is not in the range 2<=x<=5"),
    (("--shards", "3"), 1, "shards is the sharded profile's (the profile is single; add profile: sharded)")])
def test_vigil_up_refuses_a_bad_shard_count_and_shards_outside_the_sharded_profile(tmp_path, args, code, message):
    result = vigil("up", "--run-dir", str(tmp_path / "run"), *args)
    assert result.returncode == code and message in result.stderr, result.stderr
    assert "Traceback" not in result.stderr


def test_a_config_file_with_shards_but_another_profile_is_refused_at_its_line(tmp_path):
    config = tmp_path / "vigil.yaml"
    config.write_text("stack:\n  profile: ha\n  shards: 3\n")
    with pytest.raises(SettingsError, match=r"vigil.yaml:\d+: .*shards is the sharded profile's \(the profile is ha"):
        load_settings(config, {})


def test_vigil_ask_and_the_dashboards_read_the_global_view_of_a_sharded_stack(tmp_path):
    from vigil.cli.ask import _prometheus_url
    from vigil.cli.dashboards import stack_prometheus
    from vigil.stack.runstate import ComponentState, StackState, read_state

    layout = RunLayout(tmp_path / "run")
    layout.root.mkdir()
    lock = open(layout.lock_file, "a+")  # as the running supervisor holds it
    fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    shard0 = ComponentState("http://127.0.0.1:9600", "http://127.0.0.1:9600/-/ready")
    state = StackState(os.getpid(), 9600, "sim", components={"prometheus": shard0, "prometheus-1": shard0})
    state.write(layout)
    assert _prometheus_url(layout.root, None) == stack_prometheus(read_state(layout.root)) == shard0.url  # single
    state.urls["metrics_query"] = "http://127.0.0.1:9691"
    state.write(layout)
    assert _prometheus_url(layout.root, None) == stack_prometheus(read_state(layout.root)) == "http://127.0.0.1:9691"
    lock.close()


def test_every_aiops_service_sees_the_one_disk_model_once_it_is_trained(tmp_path):
    settings, layout = generate(tmp_path)
    (layout.aiops_dir / "disk_model.json").write_text("{}")  # as train-disk writes it into shard 0's directory
    for shard in range(1, settings.shards):
        assert (ShardedLayout(layout).aiops_dir(shard) / "disk_model.json").read_text() == "{}"
    write_stack_files(settings, layout, [f"node-{i}" for i in range(1, 7)])  # a restart keeps the links


def test_vmalert_waits_for_every_job_an_absent_guard_reads(tmp_path):
    """vmalert starts once VictoriaMetrics has an `up` sample of every scrape job the shards keep targets
    of: a global `absent(up{job=...})` guard evaluated before a job's first scrape arrived fired
    NodeExporterAbsent on a healthy stack (the e2e test caught it)."""
    settings, layout = generate(tmp_path)
    jobs = scraped_jobs([ShardedLayout(layout).prometheus_config(i) for i in range(settings.shards)])
    rules = yaml.safe_load(ShardedLayout(layout).global_rules.read_text())
    guarded = {match for group in rules["groups"] for rule in group["rules"]
               for match in re.findall(r'absent\(up\{job="([^"]+)"', rule["expr"])}
    assert guarded and {"node-exporter", "vigil-node-health"} <= guarded <= jobs
