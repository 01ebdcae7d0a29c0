"""The files `vigil up` generates pass the real tools' own checks, and bad input is refused early."""

from __future__ import annotations

import os
import sqlite3
import socket
import subprocess
from pathlib import Path

import pytest
import yaml

import vigil.rules as rulegen
from vigil.common import symptoms
from golden_support import check_golden
from stack_support import vigil
from vigil.stack.components import GpuBackend, component_specs
from vigil.rules.alertmanager_routing import ROUTING_FILE, load_routing
from vigil.stack.settings import SettingsError, load_settings
from vigil.stack.config import RunLayout, alertmanager_config, dump_config, prometheus_config, write_stack_files

NODES = ["node-1", "node-2", "node-3"]


def generate(tmp_path, **overrides):
    settings = load_settings(None, {"run_dir": tmp_path / "run", "sim_nodes": 3, **overrides})
    layout = RunLayout(settings.run_path)
    write_stack_files(settings, layout, NODES)
    return settings, layout


def test_generated_prometheus_config_and_rules_pass_promtool(tmp_path):
    settings, layout = generate(tmp_path)
    result = subprocess.run(["promtool", "check", "config", str(layout.prometheus_config)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout + result.stderr
    config = yaml.safe_load(layout.prometheus_config.read_text())
    gpu_job = next(j for j in config["scrape_configs"] if j["job_name"] == "vigil-gpu")
    assert [c["labels"]["node"] for c in gpu_job["static_configs"]] == ["node-1", "node-2", "node-3"]
    assert gpu_job["static_configs"][1]["targets"] == [f"127.0.0.1:{settings.ports.gpu_node(2)}"]


def test_the_hosts_node_exporter_is_labelled_as_the_host_not_as_a_simulated_node(tmp_path):
    """node_exporter reports this machine's filesystems: labelled `node-1`, a filling host disk would
    page as a fault of the simulated GPU node (and be muted by its node-down drill)."""
    _, layout = generate(tmp_path)
    jobs = {j["job_name"]: j for j in yaml.safe_load(layout.prometheus_config.read_text())["scrape_configs"]}
    labels = [c["labels"]["node"] for c in jobs["node-exporter"]["static_configs"]]
    assert labels == [socket.gethostname()] and not set(labels) & set(NODES)
    assert [c["labels"]["node"] for c in jobs["vigil-node-health"]["static_configs"]] == ["node-1"]  # simulated disks


def test_a_stack_without_the_node_health_exporter_does_not_page_for_its_absence(tmp_path):
    """`node_health: false` runs no node health exporter: the alert that its target is absent would page
    on every fresh stack with no fault, so it is left out (with its inhibitions); the rest stay."""
    def alerts(run) -> set[str]:
        doc = yaml.safe_load(run.rules_dir.joinpath("vigil-rules.yml").read_text())
        return {r["alert"] for g in doc["groups"] for r in g["rules"] if "alert" in r}
    _, with_it = generate(tmp_path / "with")
    _, without = generate(tmp_path / "without", node_health=False)
    assert alerts(with_it) - alerts(without) == {"NodeHealthExporterAbsent"}
    assert "NodeHealthExporterDown" in alerts(without)  # no target, so no series: it cannot fire


def test_generated_alertmanager_config_passes_amtool_and_keeps_the_token_out(tmp_path):
    _, layout = generate(tmp_path)
    result = subprocess.run(["amtool", "check-config", str(layout.alertmanager_config)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    token = layout.token_file.read_text().strip()
    assert len(token) >= 32 and token not in layout.alertmanager_config.read_text()
    assert layout.token_file.stat().st_mode & 0o077 == 0  # readable by the owner only
    route = yaml.safe_load(layout.alertmanager_config.read_text())["route"]
    assert route["routes"][0] == {"receiver": "watchdog", "matchers": ['alertname="Watchdog"'],
                                  "group_wait": "1s", "group_interval": "2s", "repeat_interval": "1m"}
    assert {r["matchers"][0] for r in route["routes"][1:]} == {'team="gpu"', 'team="infra"', 'team="jobs"', 'team="platform"',
                                                               'severity="critical"', 'severity="warning"', 'severity="info"'}


def test_token_survives_regeneration(tmp_path):
    _, layout = generate(tmp_path)
    first = layout.token_file.read_text()
    generate(tmp_path)
    assert layout.token_file.read_text() == first  # Alertmanager and the notifier keep agreeing


def test_bad_oncall_config_is_refused_with_file_and_line_before_anything_starts(tmp_path):
    oncall = tmp_path / "oncall.yaml"
    oncall.write_text("targets:\n  dri:\n    name: X\n    channels:\n      - type: carrier-pigeon\nroutes:\n  - match: {severity: critical}\n    notify: nobody\n")
    config = tmp_path / "vigil.yaml"
    config.write_text(f"stack:\n  oncall_config: {oncall}\n")
    result = vigil("up", "--config", str(config), "--run-dir", str(tmp_path / "run"), "--no-aiops")
    assert result.returncode == 1
    assert f"{oncall}:5:" in result.stderr and f"{oncall}:8:" in result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "run" / "state.json").exists()


def golden_documents(settings) -> dict[str, dict]:
    layout = RunLayout(Path("/run/vigil"))  # a fixed run directory: the paths in the configs are stable
    ruleset = rulegen.load_specs(rulegen.default_spec_paths())
    return {"prometheus.yml": prometheus_config(settings, layout, NODES),
            "alertmanager.yml": alertmanager_config(settings, layout, ruleset, load_routing(ROUTING_FILE, ruleset))}


@pytest.mark.parametrize("name", ["prometheus.yml", "alertmanager.yml"])
def test_generated_configs_match_the_golden_files(name, monkeypatch):
    """Default settings, three nodes; refresh with VIGIL_UPDATE_GOLDEN=1 and review `git diff tests/golden/stack`."""
    monkeypatch.setattr(socket, "gethostname", lambda: "demo-host")  # node_exporter's label: this machine's name
    settings = load_settings(None, {"sim_nodes": 3})
    check_golden(f"stack/{name}", dump_config(golden_documents(settings)[name]))


def test_the_written_files_are_the_golden_documents(tmp_path):
    settings, layout = generate(tmp_path)
    ruleset = rulegen.load_specs(rulegen.default_spec_paths())
    routing = load_routing(ROUTING_FILE, ruleset)
    assert layout.prometheus_config.read_text() == dump_config(prometheus_config(settings, layout, NODES))
    assert layout.alertmanager_config.read_text() == dump_config(alertmanager_config(settings, layout, ruleset, routing))


@pytest.mark.parametrize("host, address", [("::1", "[::1]"), ("localhost", "localhost")])
def test_the_settings_host_is_used_by_every_config_and_component(tmp_path, host, address):
    settings, layout = generate(tmp_path, host=host)
    check = subprocess.run(["promtool", "check", "config", str(layout.prometheus_config)], capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr
    check = subprocess.run(["amtool", "check-config", str(layout.alertmanager_config)], capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr
    prometheus = yaml.safe_load(layout.prometheus_config.read_text())
    targets = [t for job in prometheus["scrape_configs"] for c in job["static_configs"] for t in c["targets"]]
    targets += prometheus["alerting"]["alertmanagers"][0]["static_configs"][0]["targets"]
    assert targets and all(t.startswith(f"{address}:") for t in targets), targets
    webhook = yaml.safe_load(layout.alertmanager_config.read_text())["receivers"][0]["webhook_configs"][0]["url"]
    assert webhook == f"http://{address}:{settings.ports.notifier}/api/v1/alerts/alertmanager"
    binaries = {name: f"/usr/bin/{name}" for name in ("prometheus", "alertmanager", "node-exporter")}
    specs = component_specs(settings, layout, binaries, GpuBackend("sim", NODES))
    text = " ".join(" ".join([*spec.argv, spec.url, spec.health_url]) for spec in specs)
    assert "127.0.0.1" not in text
    assert f"--web.listen-address={address}:{settings.ports.prometheus}" in text
    assert f"http://{address}:{settings.ports.notifier}/healthz" in text


def test_secrets_and_the_notifier_database_are_owner_only_whatever_the_umask(tmp_path):
    old = os.umask(0o002)
    try:
        _, layout = generate(tmp_path)
        assert layout.secrets_dir.stat().st_mode & 0o777 == 0o700
        assert layout.token_file.stat().st_mode & 0o777 == 0o600
        assert layout.notifier_db.stat().st_mode & 0o777 == 0o600
        with sqlite3.connect(layout.notifier_db) as db:  # SQLite gives -wal and -shm the database's mode
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("CREATE TABLE t (x)")
            db.execute("INSERT INTO t VALUES (1)")
            wal, shm = (layout.notifier_db.with_name(f"notifier.db-{ext}") for ext in ("wal", "shm"))
            assert wal.stat().st_mode & 0o777 == 0o600 and shm.stat().st_mode & 0o777 == 0o600
        layout.secrets_dir.chmod(0o755)
        layout.token_file.chmod(0o644)
        generate(tmp_path)  # a second start tightens what someone loosened
        assert layout.secrets_dir.stat().st_mode & 0o777 == 0o700
        assert layout.token_file.stat().st_mode & 0o777 == 0o600
        assert sqlite3.connect(layout.notifier_db).execute("SELECT x FROM t").fetchall() == [(1,)]  # kept, not truncated
    finally:
        os.umask(old)


def test_settings_mistakes_in_the_file_name_file_and_line_all_at_once(tmp_path):
    config = tmp_path / "vigil.yaml"
    config.write_text("# my stack\nstack:\n  port_base: 80\n  sim_nodes: 2\n  sim_nodes: 3\n  scrape_intervall: 1\n"
                      "  group_wait: soon\n")
    result = vigil("up", "--config", str(config), "--run-dir", str(tmp_path / "run"), "--sim-gpus", "99")
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert f"{config}:3: port_base: Input should be greater than or equal to 1024" in result.stderr
    assert f"{config}:5: duplicate key 'sim_nodes' (first defined on line 4)" in result.stderr
    assert f"{config}:6: scrape_intervall: unknown setting (known: run_dir, host, port_base" in result.stderr
    assert f"{config}:7: group_wait: 'soon' is not a duration" in result.stderr
    assert "sim_gpus: Input should be less than or equal to 16 (from the command line)" in result.stderr
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("text, line, message", [
    ("stack: [1, 2]\n", 1, "`stack` must be a mapping of settings"),
    ("- 1\n", 1, "expected a mapping of settings (under `stack:`) at the top level"),
    ("stack:\n  sim_nodes: [\n", 3, "invalid YAML"),
    ("sim_nodes: 2\nhost: 10.0.0.1\n", 2, "host: '10.0.0.1' is not a loopback address"),
    ("grafana_url: grafana:3000\n", 1, "grafana_url: 'grafana:3000' is not an http:// or https:// URL"),
])
def test_a_broken_settings_file_gets_its_line(tmp_path, text, line, message):
    config = tmp_path / "vigil.yaml"
    config.write_text(text)
    with pytest.raises(SettingsError) as caught:
        load_settings(config, {})
    assert str(caught.value).startswith(f"{config}:{line}: {message}")


def test_settings_durations_take_the_shared_forms(tmp_path):
    config = tmp_path / "vigil.yaml"
    config.write_text("stack:\n  scrape_interval: 10\n  evaluation_interval: 5s\n  repeat_interval: 1h30m\n"
                      "  max_for: null\n")
    settings = load_settings(config, {})
    assert (settings.scrape_interval, settings.evaluation_interval, settings.repeat_interval) == (10, 5, 5400)
    assert settings.max_for is None
    assert load_settings(None, {}) == load_settings(_empty(tmp_path), {})  # an empty file means the defaults


def _empty(tmp_path: Path) -> Path:
    path = tmp_path / "empty.yaml"
    path.write_text("# nothing set yet\n")
    return path


def test_a_stacks_grafana_reaches_the_notifier_so_pages_link_to_its_dashboards(tmp_path):
    binaries = {name: f"/usr/bin/{name}" for name in ("prometheus", "alertmanager", "node-exporter")}
    settings, layout = generate(tmp_path, grafana_url="https://grafana.example")
    [notifier] = [spec for spec in component_specs(settings, layout, binaries, GpuBackend("sim", NODES))
                  if spec.name == "notifier"]
    assert notifier.argv[notifier.argv.index("--grafana-url") + 1] == "https://grafana.example"
    bare, bare_layout = generate(tmp_path / "bare")
    [plain] = [spec for spec in component_specs(bare, bare_layout, binaries, GpuBackend("sim", NODES))
               if spec.name == "notifier"]
    assert "--grafana-url" not in plain.argv


def test_a_symptom_is_held_for_its_cause_by_the_stacks_own_timing(tmp_path):
    """The notifier holds a symptom's first page for a cause that fires later: the cause's `for`, the
    evaluation interval and two scrapes (at least 10 s) — the stack's own, so a demo scraping every 2 s
    pages an overheating GPU some 12 s after it fires, not after the 45 s that 15-second scrapes need."""
    def hold(layout, alertname: str) -> float:
        doc = yaml.safe_load(layout.rules_dir.joinpath("vigil-rules.yml").read_text())
        [rule] = [r for g in doc["groups"] for r in g["rules"] if r.get("alert") == alertname]
        return symptoms.decode(rule["annotations"]["symptom_of"]).wait_s

    fast, fast_run = generate(tmp_path / "fast")
    assert (fast.scrape_interval, fast.evaluation_interval, fast.max_for) == (2, 2, 10)
    # GpuOverheating waits for GpuFallenOffBus; both `for`s are cut to 10 s
    assert hold(fast_run, "GpuOverheating") == 10 + 2 + 10 - 10
    _, slow_run = generate(tmp_path / "slow", scrape_interval=15, evaluation_interval=15)
    assert hold(slow_run, "GpuOverheating") == 10 + 15 + 30 - 10  # the rules' default timing: two 15 s scrapes
