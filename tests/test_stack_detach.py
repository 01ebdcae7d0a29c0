"""`vigil up --detach` shows what its background child says, and node_exporter's flags fit the host.

A healthy detached start (banner, progress, URL table) and a refused second start in a busy run
directory are checked on the real stack in tests/test_stack_e2e.py.
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import requests

from stack_support import free_port_base, vigil
from vigil.stack.components import find_binaries, node_exporter_flags
from vigil.stack.detach import LogFollower


def test_the_follower_hands_out_each_new_line_once_and_waits_for_unfinished_ones(tmp_path):
    log = tmp_path / "supervisor.log"
    log.write_text("an earlier run\n")
    follower = LogFollower(log, log.stat().st_size)
    assert follower.new_lines() == []
    with open(log, "a") as out:
        out.write("banner\nstarting 5 components …\n  notif")
    assert follower.new_lines() == ["banner", "starting 5 components …"]
    with open(log, "a") as out:
        out.write("ier is healthy\nError: half a line")
    assert follower.new_lines() == ["  notifier is healthy"]
    assert follower.new_lines(final=True) == ["Error: half a line"]
    assert follower.new_lines(final=True) == []


def test_the_follower_of_a_log_not_written_yet_sees_nothing(tmp_path):
    assert LogFollower(tmp_path / "missing.log", 0).new_lines(final=True) == []


def test_a_child_that_cannot_start_shows_its_reason_then_the_log(tmp_path):
    oncall = tmp_path / "oncall.yaml"
    oncall.write_text("targets:\n  dri:\n    name: X\n    channels:\n      - type: carrier-pigeon\nroutes: []\n")
    config = tmp_path / "vigil.yaml"
    config.write_text(f"stack:\n  oncall_config: {oncall}\n")
    run_dir = tmp_path / "run"
    result = vigil("up", "--detach", "--config", str(config), "--run-dir", str(run_dir), "--no-aiops",
                   "--port-base", str(free_port_base()))
    assert result.returncode == 1, result.stdout + result.stderr
    said = result.stdout.splitlines()
    assert said[0].startswith("starting the stack in the background")
    assert any(line.startswith("Error: ") and f"{oncall}:5:" in line for line in said[1:]), result.stdout
    assert "Traceback" not in result.stdout + result.stderr
    log = run_dir / "logs" / "supervisor.log"
    assert result.stderr.startswith("Error: the stack did not start") and str(log) in result.stderr
    assert f"{oncall}:5:" in log.read_text()
    assert not (run_dir / "state.json").exists()


def test_node_exporter_skips_the_systemd_collector_only_where_systemd_is_absent(tmp_path):
    assert node_exporter_flags(tmp_path / "no-systemd") == ["--no-collector.systemd"]
    (tmp_path / "systemd").mkdir()
    assert node_exporter_flags(tmp_path / "systemd") == []


def test_node_exporter_with_these_flags_logs_no_collector_error_for_systemd(tmp_path):
    port = free_port_base(span=1)
    log = tmp_path / "node-exporter.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen([find_binaries()["node-exporter"], *node_exporter_flags(),
                                 f"--web.listen-address=127.0.0.1:{port}"], stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 20
        metrics = None
        while metrics is None and time.monotonic() < deadline:
            try:
                metrics = requests.get(f"http://127.0.0.1:{port}/metrics", timeout=5).text  # runs every collector
            except requests.ConnectionError:
                time.sleep(0.1)
        assert metrics is not None, log.read_text()
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    systemd_collected = 'node_scrape_collector_success{collector="systemd"}' in metrics
    assert systemd_collected == Path("/run/systemd/system").is_dir()
    assert [line for line in log.read_text().splitlines() if "level=error" in line and "systemd" in line] == []
