"""`vigil deploy scrape-config`: the GPU nodes' scrape jobs, as the stack writes its own, accepted by the
real `promtool check config` in both forms (static scrape_configs and file_sd target files)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from vigil.cli import main
from vigil.stack.settings import StackSettings
from vigil.stack.config import RunLayout, prometheus_config

PROMTOOL = shutil.which("promtool")
needs_promtool = pytest.mark.skipif(PROMTOOL is None, reason="promtool is missing (Debian's prometheus package)")


def scrape_config(*args: str) -> str:
    result = CliRunner().invoke(main, ["deploy", "scrape-config", *args])
    assert result.exit_code == 0, result.output
    return result.output


def promtool_check(config: Path) -> subprocess.CompletedProcess:
    return subprocess.run([PROMTOOL, "check", "config", str(config)], capture_output=True, text=True, timeout=60)


def write_config(path: Path, scrape_configs: list[dict]) -> Path:
    path.write_text(yaml.safe_dump({"global": {"scrape_interval": "15s"}, "scrape_configs": scrape_configs}))
    return path


@needs_promtool
def test_the_fragment_passes_promtool_and_names_every_nodes_exporters(tmp_path):
    fragment = yaml.safe_load(scrape_config("--node", "gpu-001", "--node", "gpu-002=10.0.0.2:9935",
                                            "--node", "gpu-003=[fd00::3]"))
    done = promtool_check(write_config(tmp_path / "prometheus.yml", fragment["scrape_configs"]))
    assert done.returncode == 0, done.stdout + done.stderr
    jobs = {job["job_name"]: job for job in fragment["scrape_configs"]}
    assert sorted(jobs) == ["node-exporter", "vigil-gpu", "vigil-node-health"]
    targets = {name: [(group["targets"], group["labels"]["node"]) for group in job["static_configs"]]
               for name, job in jobs.items()}
    assert targets["vigil-gpu"] == [(["gpu-001:9835"], "gpu-001"), (["10.0.0.2:9935"], "gpu-002"), (["[fd00::3]:9835"], "gpu-003")]
    assert targets["vigil-node-health"] == [(["gpu-001:9101"], "gpu-001"), (["10.0.0.2:9101"], "gpu-002"), (["[fd00::3]:9101"], "gpu-003")]
    assert targets["node-exporter"][1] == (["10.0.0.2:9100"], "gpu-002")
    assert jobs["vigil-gpu"]["honor_labels"] and jobs["vigil-node-health"]["honor_labels"]
    assert "honor_labels" not in jobs["node-exporter"]  # node_exporter has no node label of its own


def test_the_fleets_jobs_are_the_ones_the_stack_scrapes(tmp_path):
    """The same nodes and ports as a local stack give the stack's own vigil-gpu and vigil-node-health jobs."""
    settings = StackSettings(sim_nodes=2)
    ports = settings.ports
    stack = {job["job_name"]: job for job in prometheus_config(settings, RunLayout(tmp_path), ["node-1", "node-2"])["scrape_configs"]}
    fleet = yaml.safe_load(scrape_config("--node", f"node-1=127.0.0.1:{ports.gpu_node(1)}",
                                         "--node", f"node-2=127.0.0.1:{ports.gpu_node(2)}",
                                         "--node-health-port", str(ports.node_health), "--node-exporter-port", "0"))
    jobs = {job["job_name"]: job for job in fleet["scrape_configs"]}
    assert jobs["vigil-gpu"] == stack["vigil-gpu"]
    assert jobs["vigil-node-health"]["static_configs"][0] == stack["vigil-node-health"]["static_configs"][0]
    assert {k: v for k, v in jobs["vigil-node-health"].items() if k != "static_configs"} == \
           {k: v for k, v in stack["vigil-node-health"].items() if k != "static_configs"}
    assert "node-exporter" not in jobs


@needs_promtool
def test_file_sd_targets_pass_promtool_and_a_broken_file_does_not(tmp_path):
    nodes = tmp_path / "gpu-nodes.txt"
    nodes.write_text("# the rack\ngpu-001\ngpu-002=10.0.0.2  # by address\n\n")
    targets = json.loads(scrape_config("--nodes-file", str(nodes), "--file-sd", "--job", "vigil-node-health"))
    assert targets == [{"targets": ["gpu-001:9101"], "labels": {"node": "gpu-001"}},
                       {"targets": ["10.0.0.2:9101"], "labels": {"node": "gpu-002"}}]
    sd_file = tmp_path / "vigil-node-health.json"
    sd_file.write_text(json.dumps(targets))
    config = write_config(tmp_path / "prometheus.yml", [{"job_name": "vigil-node-health", "honor_labels": True,
                                                         "file_sd_configs": [{"files": [str(sd_file)]}]}])
    done = promtool_check(config)
    assert done.returncode == 0, done.stdout + done.stderr
    sd_file.write_text(json.dumps([{"targets": "gpu-001:9101"}]))  # promtool reads the file: a string is not a list
    assert promtool_check(config).returncode != 0


def test_bad_nodes_are_named_at_once_with_their_line(tmp_path):
    nodes = tmp_path / "nodes.txt"
    nodes.write_text("gpu-001\ngpu-002:http\n[fd00::1\ngpu-004\n")
    result = CliRunner().invoke(main, ["deploy", "scrape-config", "--nodes-file", str(nodes)])
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert f"{nodes}:2:" in result.output and f"{nodes}:3:" in result.output and ":1:" not in result.output
    nodes.write_bytes(b"gpu-001\n\xff\xfe\n")  # not UTF-8 text: a message, not a traceback
    result = CliRunner().invoke(main, ["deploy", "scrape-config", "--nodes-file", str(nodes)])
    assert result.exit_code == 1 and "Traceback" not in result.output and f"{nodes}: cannot read" in result.output
    result = CliRunner().invoke(main, ["deploy", "scrape-config", "--node", "gpu-1:0"])
    assert result.exit_code == 2 and "--node" in result.output
    assert CliRunner().invoke(main, ["deploy", "scrape-config"]).exit_code == 2
    # one label for two hosts, or one exporter twice: both named, nothing printed
    result = CliRunner().invoke(main, ["deploy", "scrape-config", "--node", "gpu-a=10.0.0.5", "--node", "gpu-a=10.0.0.7",
                                       "--node", "10.0.0.9:9835", "--node", "b=10.0.0.9:9835"])
    assert result.exit_code == 2 and "scrape_configs" not in result.output
    said = " ".join(result.output.split())
    assert "node label gpu-a is given 2 times (gpu-a=10.0.0.5:9835, gpu-a=10.0.0.7:9835)" in said, said
    assert "exporter 10.0.0.9:9835 is given 2 times (10.0.0.9=10.0.0.9:9835, b=10.0.0.9:9835)" in said, said
    result = CliRunner().invoke(main, ["deploy", "scrape-config", "--node", "a", "--node-exporter-port", "0",
                                       "--file-sd", "--job", "node-exporter"])
    assert result.exit_code == 2 and "left out" in result.output


@needs_promtool
def test_the_central_hosts_prometheus_config_as_the_install_guide_builds_it(tmp_path):
    """docs/deploy.md, central host, steps 4-5: the generated rules, Alertmanager on loopback, the GPU
    nodes' jobs from scrape-config and the central services: promtool checks the config and its rules."""
    result = CliRunner().invoke(main, ["rules", "generate", "-o", str(tmp_path / "vigil"), "--alertmanager",
                                       "--notifier-url", "http://127.0.0.1:9095/api/v1/alerts/alertmanager",
                                       "--token-file", str(tmp_path / "webhook-token")])
    assert result.exit_code == 0, result.output
    fleet = yaml.safe_load(scrape_config("--node", "gpu-001", "--node", "gpu-002"))["scrape_configs"]
    config = {"global": {"scrape_interval": "15s"},
              "rule_files": [str(tmp_path / "vigil" / "vigil-rules.yml")],
              "alerting": {"alertmanagers": [{"static_configs": [{"targets": ["127.0.0.1:9093"]}]}]},
              "scrape_configs": [*fleet, {"job_name": "vigil-notifier", "static_configs": [{"targets": ["127.0.0.1:9095"]}]},
                                 {"job_name": "vigil-aiops", "honor_labels": True,
                                  "static_configs": [{"targets": ["127.0.0.1:9605"]}]}]}
    (tmp_path / "prometheus.yml").write_text(yaml.safe_dump(config))
    done = promtool_check(tmp_path / "prometheus.yml")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS" in done.stdout + done.stderr and "rules found" in done.stdout + done.stderr
