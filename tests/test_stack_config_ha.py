"""The ha profile's generated files and components: the real tools accept them, the replicas differ only
where they must, every port is distinct, the initdb'd PostgreSQL works, and hashmod shards split the
targets as Prometheus does."""

from __future__ import annotations

import json
import subprocess

import pytest
import requests
import yaml

from stack_support import vigil
from test_notifier_support import free_port, wait_for
from vigil.stack.components import GpuBackend
from vigil.stack.components_ha import ha_component_specs
from vigil.stack.history_vm import import_lines
from vigil.stack.settings import SettingsError, load_settings
from vigil.stack.config import RunLayout, write_stack_files
from vigil.stack.config.ha import REPLICA_LABEL, HaLayout, HaTopology
from vigil.stack.config.ha_alertmanager import cluster_flags
from vigil.stack.config.sharding import HASH_LABEL, shard_of, shard_relabel, sharded_config

BINARIES = {"prometheus": "prometheus", "promtool": "promtool", "alertmanager": "alertmanager", "amtool": "amtool",
            "node-exporter": "node_exporter", "victoria-metrics": "victoria-metrics"}
USER_DB = "postgresql://vigil@db.example:5432/vigil"


def generate(tmp_path, nodes: int = 3, **overrides):
    settings = load_settings(None, {"run_dir": tmp_path / "run", "sim_nodes": nodes, "profile": "ha",
                                    "database_url": USER_DB, **overrides})
    layout = RunLayout(settings.run_path)
    write_stack_files(settings, layout, [f"node-{i}" for i in range(1, nodes + 1)])
    return settings, layout


def promtool_check(path) -> None:
    result = subprocess.run(["promtool", "check", "config", str(path)], capture_output=True, text=True)
    assert result.returncode == 0 and "SUCCESS" in result.stdout + result.stderr, result.stdout + result.stderr


def test_both_replicas_pass_promtool_and_differ_only_in_their_replica_label(tmp_path):
    settings, layout = generate(tmp_path)
    topology, ha = HaTopology(settings), HaLayout(layout)
    configs = []
    for replica in (1, 2):
        promtool_check(ha.prometheus_config(replica))
        configs.append(yaml.safe_load(ha.prometheus_config(replica).read_text()))
    assert [c["global"]["external_labels"][REPLICA_LABEL] for c in configs] == ["prometheus", "prometheus-2"]
    for config in configs:
        del config["global"]["external_labels"][REPLICA_LABEL]
    assert configs[0] == configs[1]
    config = configs[0]
    drop = {"action": "labeldrop", "regex": REPLICA_LABEL}
    assert config["alerting"]["alert_relabel_configs"] == [drop]  # Alertmanager sees one alert from both
    assert config["alerting"]["alertmanagers"][0]["static_configs"][0]["targets"] == \
        [f"127.0.0.1:{p}" for p in topology.alertmanager_ports()]
    assert config["remote_write"][0]["url"] == f"http://127.0.0.1:{topology.victoria_metrics_port}/api/v1/write"
    assert config["remote_write"][0]["write_relabel_configs"] == [drop]
    jobs = {j["job_name"]: j["static_configs"][0]["targets"] for j in config["scrape_configs"]}
    assert len(jobs["alertmanager"]) == 3 and len(jobs["prometheus"]) == 2 and len(jobs["vigil-notifier"]) == 2


def test_the_cluster_config_passes_amtool_and_every_webhook_goes_to_both_notifiers(tmp_path):
    settings, layout = generate(tmp_path)
    result = subprocess.run(["amtool", "check-config", str(layout.alertmanager_config)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    notifiers = [f"http://127.0.0.1:{p}" for p in HaTopology(settings).notifier_ports()]
    receivers = yaml.safe_load(layout.alertmanager_config.read_text())["receivers"]
    for receiver in receivers:
        urls = [hook["url"] for hook in receiver["webhook_configs"]]
        assert [u.rsplit("/api/", 1)[0] for u in urls] == notifiers, receiver["name"]
        assert len({u.rsplit("/api/", 1)[1] for u in urls}) == 1  # the same path on each


def test_each_peer_gossips_with_the_two_others_on_loopback(tmp_path):
    settings, _ = generate(tmp_path)
    gossip = [f"127.0.0.1:{p}" for p in HaTopology(settings).gossip_ports()]
    for peer in (1, 2, 3):
        flags = cluster_flags(settings, peer)
        assert f"--cluster.listen-address={gossip[peer - 1]}" in flags
        assert sorted(f.split("=", 1)[1] for f in flags if f.startswith("--cluster.peer=")) == \
            sorted(g for i, g in enumerate(gossip, start=1) if i != peer)


def test_every_component_has_its_own_port_and_a_user_database_replaces_postgres(tmp_path):
    settings, layout = generate(tmp_path, nodes=80)
    node_names = [f"node-{i}" for i in range(1, 81)]
    specs = ha_component_specs(settings, layout, BINARIES, GpuBackend("sim", node_names))
    names = [s.name for s in specs]
    assert {"prometheus", "prometheus-2", "alertmanager", "alertmanager-2", "alertmanager-3", "notifier",
            "notifier-2", "victoria-metrics"} <= set(names) and "postgres" not in names
    ports = [p for s in specs for p in s.ports] + HaTopology(settings).gossip_ports()
    assert len(ports) == len(set(ports)) and max(ports) <= settings.port_base + 99
    notifiers = [s for s in specs if s.name.startswith("notifier")]
    assert all(s.argv[s.argv.index("--db") + 1] == USER_DB for s in notifiers)
    aiops = next(s for s in specs if s.name == "aiops")
    assert aiops.argv[aiops.argv.index("--prometheus-url") + 1] == HaTopology(settings).victoria_metrics_url
    vm = next(s for s in specs if s.name == "victoria-metrics")
    assert f"-dedup.minScrapeInterval=2s" in vm.argv  # the scrape interval


def test_too_many_nodes_or_a_non_postgresql_database_are_refused_with_every_reason():
    with pytest.raises(SettingsError) as caught:
        load_settings(None, {"profile": "ha", "sim_nodes": 81, "database_url": "sqlite:///x.db"})
    assert "at most 80 simulated nodes" in str(caught.value) and "postgresql://" in str(caught.value)
    with pytest.raises(SettingsError, match="postgresql://"):
        load_settings(None, {"profile": "ha", "database_url": "sqlite:///x.db"})
    with pytest.raises(SettingsError, match="ha profile"):
        load_settings(None, {"database_url": USER_DB})


def test_vigil_up_refuses_a_bad_profile_setting_without_a_traceback(tmp_path):
    result = vigil("up", "--profile", "ha", "--sim-nodes", "85", "--run-dir", str(tmp_path / "run"))
    assert result.returncode != 0 and "Traceback" not in result.stderr
    assert "at most 80 simulated nodes" in result.stderr


@pytest.mark.parametrize("shards", [1, 2, 3])
def test_every_shard_config_passes_promtool_and_the_shards_split_the_gpu_targets(tmp_path, shards):
    settings, layout = generate(tmp_path, nodes=12)
    base = yaml.safe_load(layout.prometheus_config.read_text())
    split: dict[int, list[str]] = {}
    for shard in range(shards):
        doc = sharded_config(base, shards, shard, {"vigil-gpu"})
        path = tmp_path / f"shard-{shard}.yml"
        path.write_text(yaml.safe_dump(doc))
        promtool_check(path)
        gpu = next(j for j in doc["scrape_configs"] if j["job_name"] == "vigil-gpu")
        assert gpu["relabel_configs"][-2:] == shard_relabel(shards, shard)
        assert doc["global"]["external_labels"]["shard"] == str(shard)
        assert len(doc["scrape_configs"]) == (len(base["scrape_configs"]) if shard == 0 else 1)
        targets = [t for c in gpu["static_configs"] for t in c["targets"]]
        split[shard] = [t for t in targets if shard_of(t, shards) == shard]
    every = sorted(t for ts in split.values() for t in ts)
    assert len(every) == 12 and len(set(every)) == 12  # each target on exactly one shard
    if shards > 1:
        assert all(split.values())  # 12 targets: no shard is left empty


def test_shard_relabel_refuses_a_shard_outside_the_range():
    with pytest.raises(ValueError):
        shard_relabel(3, 3)
    assert shard_relabel(4, 2)[0] == {"source_labels": ["__address__"], "modulus": 4, "target_label": HASH_LABEL,
                                      "action": "hashmod"}


@pytest.mark.e2e
def test_a_real_prometheus_shard_keeps_exactly_the_targets_shard_of_predicts(tmp_path):
    """Prometheus' own hashmod decides: shard 1 of 3 keeps the GPU targets `shard_of` assigns to it."""
    settings, layout = generate(tmp_path, nodes=12)
    base = yaml.safe_load(layout.prometheus_config.read_text())
    port = free_port()
    base["scrape_configs"] = [j for j in base["scrape_configs"] if j["job_name"] == "vigil-gpu"]
    # no rules, and no remote write: with no VictoriaMetrics to take it, a stopping Prometheus retries its
    # last batch for up to its flush deadline (a minute), longer than the 30 s this test waits for it
    for key in ("rule_files", "remote_write"):
        base.pop(key)
    (tmp_path / "shard.yml").write_text(yaml.safe_dump(sharded_config(base, 3, 1, {"vigil-gpu"})))
    prometheus = subprocess.Popen(["prometheus", f"--config.file={tmp_path / 'shard.yml'}",
                                   f"--storage.tsdb.path={tmp_path / 'tsdb'}", f"--web.listen-address=127.0.0.1:{port}"],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        def targets() -> dict | None:
            try:
                data = requests.get(f"http://127.0.0.1:{port}/api/v1/targets", timeout=2).json()["data"]
            except requests.RequestException:
                return None
            return data if len(data["activeTargets"]) + len(data["droppedTargets"]) == 12 else None

        data = wait_for(targets, timeout=30)
    finally:
        prometheus.terminate()
        prometheus.wait(timeout=30)
    addresses = [f"127.0.0.1:{settings.ports.gpu_node(i)}" for i in range(1, 13)]
    kept = sorted(t["discoveredLabels"]["__address__"] for t in data["activeTargets"])
    assert kept and kept == sorted(a for a in addresses if shard_of(a, 3) == 1)


def test_the_victoria_metrics_backfill_has_the_labels_of_the_replicas_remote_written_series(tmp_path):
    """History and live samples must be one series in VictoriaMetrics: the backfill carries the external
    labels remote write adds (not the replica label, which it drops) and millisecond timestamps."""
    settings, layout = generate(tmp_path, nodes=2, backfill_days=1)
    lines = [json.loads(line) for line in import_lines(settings, layout, ["node-1", "node-2"], end=1_800_000_000.0)]
    assert len(lines) == 2 * settings.sim_gpus
    written = yaml.safe_load(HaLayout(layout).prometheus_config(2).read_text())
    external = {k: v for k, v in written["global"]["external_labels"].items() if k != REPLICA_LABEL}
    for line in lines:
        assert {k: line["metric"][k] for k in external} == external and REPLICA_LABEL not in line["metric"]
        assert line["metric"]["__name__"] == "vigil_gpu_utilization_ratio" and line["metric"]["job"] == "vigil-gpu"
        assert line["timestamps"][-1] == 1_799_999_700_000 and len(line["timestamps"]) == 288  # 1 day at 5 min, to `end`
