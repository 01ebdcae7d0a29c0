"""The supervisor with real child processes: health, restart with backoff, clean stop, port conflicts."""

from __future__ import annotations

import os
import signal
import socket
import sys
import time

import pytest

from vigil.common.ports import free_port, port_is_free
from vigil.stack.supervisor import ComponentSpec, Supervisor, taken_ports


def http_server(port: int) -> ComponentSpec:
    argv = [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1"]
    return ComponentSpec("web", argv, f"http://127.0.0.1:{port}/", f"http://127.0.0.1:{port}/", ports=[port])


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie that nobody reaped yet counts as gone
    with open(f"/proc/{pid}/stat") as fh:
        return fh.read().split(")")[1].split()[0] != "Z"


def test_component_becomes_healthy_and_stops_cleanly(tmp_path):
    port = free_port()
    sup = Supervisor([http_server(port)], tmp_path / "logs")
    sup.start()
    try:
        assert sup.wait_healthy(15) == []
        pid = sup.pids()["web"]
        assert alive(pid)
    finally:
        sup.stop()
    assert not alive(pid)
    assert port_is_free(port)


def test_crashed_component_is_restarted_with_backoff_and_logged(tmp_path, caplog):
    port = free_port()
    sup = Supervisor([http_server(port)], tmp_path / "logs")
    sup.start()
    try:
        assert sup.wait_healthy(15) == []
        first = sup.pids()["web"]
        os.kill(first, signal.SIGKILL)
        crashed_at = time.monotonic()
        deadline = crashed_at + 10
        while sup.restarts()["web"] == 0 and time.monotonic() < deadline:
            sup.poll()
            time.sleep(0.05)
        assert sup.restarts()["web"] == 1
        assert time.monotonic() - crashed_at >= 0.9, "restart must wait for the backoff"
        assert sup.pids()["web"] != first
        assert sup.wait_healthy(15) == []
        assert "exited with code -9; restarting in 1s" in caplog.text
    finally:
        sup.stop()


def test_stop_kills_the_whole_process_group(tmp_path):
    # A component that starts a grandchild: stopping must not leave the grandchild behind.
    script = "import subprocess, sys, time; p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); print(p.pid, flush=True); time.sleep(60)"
    spec = ComponentSpec("parent", [sys.executable, "-c", script], "", "http://127.0.0.1:1/")
    sup = Supervisor([spec], tmp_path / "logs")
    sup.start()
    log = tmp_path / "logs" / "parent.log"
    deadline = time.monotonic() + 10
    while not log.read_text().strip() and time.monotonic() < deadline:
        time.sleep(0.05)
    grandchild = int(log.read_text().split()[0])
    assert alive(grandchild)
    sup.stop()
    time.sleep(0.2)
    assert not alive(grandchild)


def test_taken_ports_lists_every_conflict():
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        busy = held.getsockname()[1]
        spare = free_port()
        specs = [ComponentSpec("a", ["true"], "", "", ports=[busy]), ComponentSpec("b", ["true"], "", "", ports=[spare])]
        assert taken_ports(specs) == [("a", busy)]


@pytest.mark.parametrize("bad", ["0.0.0.0", "10.1.2.3"])
def test_settings_refuse_non_loopback(bad):
    from vigil.stack.settings import SettingsError, load_settings

    with pytest.raises(SettingsError, match="not a loopback address"):
        load_settings(None, {"host": bad})


def test_settings_report_every_error_with_the_file(tmp_path):
    from vigil.stack.settings import SettingsError, load_settings

    cfg = tmp_path / "vigil.yaml"
    cfg.write_text("stack:\n  sim_nodes: 0\n  port_base: 80\n  bogus: 1\n")
    with pytest.raises(SettingsError) as err:
        load_settings(cfg, {})
    text = str(err.value)
    assert text.count(str(cfg)) == 3
    assert "sim_nodes" in text and "port_base" in text and "bogus" in text


def test_settings_yaml_error_names_the_line(tmp_path):
    from vigil.stack.settings import SettingsError, load_settings

    cfg = tmp_path / "vigil.yaml"
    cfg.write_text("stack:\n  sim_nodes: 2\n  port_base: [\n")
    with pytest.raises(SettingsError, match=rf"{cfg}:\d+: invalid YAML"):
        load_settings(cfg, {})


def test_oneshot_job_runs_once_and_is_restarted_only_if_it_fails(tmp_path):
    marker = tmp_path / "runs"
    ok = ComponentSpec("ok-job", [sys.executable, "-c", f"open({str(marker)!r}, 'a').write('x')"], "", "", oneshot=True)
    failing = ComponentSpec("bad-job", [sys.executable, "-c", "raise SystemExit(3)"], "", "", oneshot=True)
    sup = Supervisor([ok, failing], tmp_path / "logs")
    sup.start()
    try:
        assert sup.wait_healthy(5) == []  # jobs have no health check to wait for
        deadline = time.monotonic() + 4
        while time.monotonic() < deadline:
            sup.poll()
            time.sleep(0.05)
        assert marker.read_text() == "x"
        assert sup.restarts()["ok-job"] == 0
        assert sup.restarts()["bad-job"] >= 1  # retried with backoff
    finally:
        sup.stop()
