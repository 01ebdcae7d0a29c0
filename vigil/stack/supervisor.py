"""Start, watch and stop the processes of a local stack.

Each component runs in its own session (so a Ctrl-C in the terminal reaches only the supervisor, which
then stops the children in order) and asks the kernel to SIGTERM it if the supervisor dies
(PR_SET_PDEATHSIG), so even a killed supervisor leaves no orphans. A component that exits is restarted
with exponential backoff; the backoff resets once it has stayed up for a while. A component may start
`after` another one: the supervisor waits (boundedly) for that one's health before spawning it, then
runs its `prepare` hook (the ha profile backfills VictoriaMetrics before the AIOps service starts).

Health is an HTTP GET answered below 300, or for a server that speaks no HTTP (PostgreSQL) a
`tcp://HOST:PORT` health URL that accepts a connection.
"""

from __future__ import annotations

import ctypes
import logging
import os
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import requests

from vigil.common.ports import port_is_free

log = logging.getLogger("vigil.stack.supervisor")

PR_SET_PDEATHSIG = 1
BACKOFF_START_S = 1.0
BACKOFF_MAX_S = 30.0
STABLE_AFTER_S = 60.0
STOP_GRACE_S = 10.0
AFTER_WAIT_S = 30.0  # how long a component waits for the one it starts `after`


@dataclass
class ComponentSpec:
    """How to run one component and how to tell whether it is healthy."""

    name: str
    argv: list[str]
    url: str  # what a user opens
    health_url: str
    ports: list[int] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    oneshot: bool = False  # a job that runs to completion (restarted only if it fails)
    after: str | None = None  # the component whose health this one waits for at start (its database)
    stop_last: bool = False  # SIGTERMed once the others have stopped (a cluster's last peer leaves alone)
    prepare: Callable[[], None] | None = None  # runs once before the first spawn, after `after` is healthy


@dataclass
class _Running:
    spec: ComponentSpec
    process: subprocess.Popen | None = None
    started_at: float = 0.0
    restarts: int = 0
    backoff_s: float = BACKOFF_START_S
    restart_at: float | None = None


def _die_with_parent() -> None:  # runs in the child between fork and exec
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    except OSError:
        pass


def taken_ports(specs: list[ComponentSpec]) -> list[tuple[str, int]]:
    """Every (component, port) that is already in use, so all conflicts are reported at once."""
    return [(s.name, p) for s in specs for p in s.ports if not port_is_free(p)]


def is_healthy(url: str, timeout: float = 1.0) -> bool:
    if url.startswith("tcp://"):
        host, _, port = url.removeprefix("tcp://").rpartition(":")
        try:
            with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout):
                return True
        except OSError:
            return False
    try:
        return requests.get(url, timeout=timeout).status_code < 300
    except requests.RequestException:
        return False


class Supervisor:
    """Runs the given components until `stop()`; `clock` is injectable for tests."""

    def __init__(self, specs: list[ComponentSpec], logs_dir: Path, clock: Callable[[], float] = time.monotonic):
        self._components = {s.name: _Running(s) for s in specs}
        self._logs_dir = logs_dir
        self._clock = clock
        self._stopping = False

    @property
    def specs(self) -> list[ComponentSpec]:
        return [c.spec for c in self._components.values()]

    def pids(self) -> dict[str, int | None]:
        return {n: (c.process.pid if c.process else None) for n, c in self._components.items()}

    def restarts(self) -> dict[str, int]:
        return {n: c.restarts for n, c in self._components.items()}

    def _spawn(self, comp: _Running) -> None:
        self._logs_dir.mkdir(parents=True, exist_ok=True)
        logfile = open(self._logs_dir / f"{comp.spec.name}.log", "ab")
        env = {**os.environ, **comp.spec.env, "PYTHONUNBUFFERED": "1"}
        try:
            comp.process = subprocess.Popen(
                comp.spec.argv, stdin=subprocess.DEVNULL, stdout=logfile, stderr=subprocess.STDOUT,
                env=env, start_new_session=True, preexec_fn=_die_with_parent,
            )
        finally:
            logfile.close()  # the child keeps its own descriptor
        comp.started_at = self._clock()
        comp.restart_at = None
        log.info("started %s (pid %d)", comp.spec.name, comp.process.pid)

    def start(self) -> None:
        for comp in self._components.values():
            if comp.spec.after:
                self._await(comp.spec.after)
            if comp.spec.prepare:
                try:
                    comp.spec.prepare()
                except Exception:  # a failed preparation must not stop the stack: the component starts anyway
                    log.exception("preparing %s failed", comp.spec.name)
            self._spawn(comp)

    def _await(self, name: str) -> None:
        """Wait for `name` to be healthy, at most AFTER_WAIT_S (then start anyway: the restarts take over)."""
        deadline = time.monotonic() + AFTER_WAIT_S
        while not is_healthy(self._components[name].spec.health_url, timeout=0.5) and time.monotonic() < deadline:
            time.sleep(0.1)

    def wait_healthy(self, timeout_s: float, on_progress: Callable[[str], None] | None = None) -> list[str]:
        """Wait until every component answers its health check; return the names still unhealthy."""
        deadline = time.monotonic() + timeout_s
        pending = {n for n, c in self._components.items() if not c.spec.oneshot}
        while pending and time.monotonic() < deadline:
            self.poll()
            for name in sorted(pending):
                if is_healthy(self._components[name].spec.health_url, timeout=0.5):
                    pending.discard(name)
                    if on_progress:
                        on_progress(name)
            if pending:
                time.sleep(0.2)
        return sorted(pending)

    def poll(self) -> None:
        """Restart exited components, respecting their backoff. Call this periodically."""
        now = self._clock()
        for comp in self._components.values():
            if self._stopping or comp.process is None:
                continue
            code = comp.process.poll()
            if code == 0 and comp.spec.oneshot:
                if comp.restart_at is None:
                    log.info("%s finished", comp.spec.name)
                    comp.restart_at = float("inf")  # done: never restarted
                continue
            if code is None:
                if now - comp.started_at >= STABLE_AFTER_S:
                    comp.backoff_s = BACKOFF_START_S
                continue
            if comp.restart_at is None:
                comp.restart_at = now + comp.backoff_s
                log.warning("%s exited with code %s; restarting in %.0fs", comp.spec.name, code, comp.backoff_s)
                comp.backoff_s = min(comp.backoff_s * 2, BACKOFF_MAX_S)
            elif now >= comp.restart_at:
                comp.restarts += 1
                log.warning("restarting %s (restart #%d)", comp.spec.name, comp.restarts)
                self._spawn(comp)

    def stop(self) -> None:
        """SIGTERM every component (whole process group), in reverse start order; SIGKILL stragglers.

        Components marked `stop_last` get their SIGTERM once the others have stopped."""
        self._stopping = True
        running = [c for c in reversed(list(self._components.values())) if c.process and c.process.poll() is None]
        self._stop_wave([c for c in running if not c.spec.stop_last])
        self._stop_wave([c for c in running if c.spec.stop_last])

    def _stop_wave(self, running: list[_Running]) -> None:
        for comp in running:
            _signal_group(comp.process, signal.SIGTERM)
        deadline = time.monotonic() + STOP_GRACE_S
        for comp in running:
            try:
                comp.process.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                log.warning("%s did not stop within %.0fs; killing it", comp.spec.name, STOP_GRACE_S)
                _signal_group(comp.process, signal.SIGKILL)
                comp.process.wait(timeout=5)
            log.info("stopped %s", comp.spec.name)


def _signal_group(process: subprocess.Popen, sig: int) -> None:
    try:
        os.killpg(process.pid, sig)
    except ProcessLookupError:
        pass
