"""The supervisor features the ha profile needs, with real child processes: a component started
`after` another waits for its health, a `tcp://` health check for a server without HTTP (PostgreSQL),
and a `stop_last` component (the first Alertmanager peer) signalled only once the others stopped."""

from __future__ import annotations

import socket
import sys
import time

from test_stack_supervisor import http_server
from vigil.common.ports import free_port
from vigil.stack.supervisor import ComponentSpec, Supervisor, is_healthy

# records when it got SIGTERM, then exits
TRAP = ("import signal, sys, time\n"
        "def stop(*_):\n"
        "    open(sys.argv[1], 'w').write(repr(time.time()))\n"
        "    sys.exit(0)\n"
        "signal.signal(signal.SIGTERM, stop)\n"
        "open(sys.argv[1] + '.up', 'w').write(repr(time.time()))\n"
        "while True: time.sleep(0.05)\n")


def trap(name: str, marker, **kwargs) -> ComponentSpec:
    return ComponentSpec(name, [sys.executable, "-c", TRAP, str(marker)], "", "", oneshot=True, **kwargs)


def test_tcp_health_is_a_connection_accepted():
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        assert is_healthy(f"tcp://127.0.0.1:{port}")
    assert not is_healthy(f"tcp://127.0.0.1:{port}")


def test_a_component_after_another_starts_once_that_one_is_healthy(tmp_path):
    port = free_port()
    slow = http_server(port)
    slow.argv = [sys.executable, "-c", f"import time, runpy, sys; time.sleep(1.5); sys.argv = ['x', '{port}', "
                                       "'--bind', '127.0.0.1']; runpy.run_module('http.server', run_name='__main__')"]
    began = time.time()
    sup = Supervisor([slow, trap("client", tmp_path / "client", after="web")], tmp_path / "logs")
    sup.start()
    try:
        healthy_by = time.time()
        assert is_healthy(slow.health_url)
        deadline = time.monotonic() + 10
        while not (tmp_path / "client.up").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        started = float((tmp_path / "client.up").read_text())
        assert started - began >= 1.5 and started <= healthy_by + 5
    finally:
        sup.stop()


def test_a_stop_last_component_is_signalled_after_the_others_stopped(tmp_path):
    # started last, so the usual reverse order would signal it first
    sup = Supervisor([trap("other", tmp_path / "other"), trap("first-peer", tmp_path / "first", stop_last=True)],
                     tmp_path / "logs")
    sup.start()
    deadline = time.monotonic() + 10
    while not all((tmp_path / f"{n}.up").exists() for n in ("first", "other")) and time.monotonic() < deadline:
        time.sleep(0.05)
    sup.stop()
    assert float((tmp_path / "other").read_text()) < float((tmp_path / "first").read_text())


def test_prepare_runs_before_the_spawn_and_a_failing_one_does_not_stop_the_start(tmp_path):
    prepared = []

    def prepare():
        prepared.append(time.time())

    def broken():
        raise RuntimeError("VictoriaMetrics refused the import")

    sup = Supervisor([trap("prepared", tmp_path / "prepared", prepare=prepare),
                      trap("broken", tmp_path / "broken", prepare=broken)], tmp_path / "logs")
    sup.start()
    try:
        deadline = time.monotonic() + 10
        while not all((tmp_path / f"{n}.up").exists() for n in ("prepared", "broken")) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(prepared) == 1 and prepared[0] <= float((tmp_path / "prepared.up").read_text())
        assert (tmp_path / "broken.up").exists()
    finally:
        sup.stop()
