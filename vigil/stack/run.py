"""`vigil up` in the foreground: prepare the run directory, start the supervisor, serve until stopped."""

from __future__ import annotations

import fcntl
import logging
import os
import signal
import time
from typing import Callable

from vigil.common.hostport import http_url
from vigil.oncall.loader import OncallConfigError, load_oncall

from vigil.stack.components import GpuBackend, component_specs, detect_gpu_backend, find_binaries
from vigil.stack.components_ha import ha_component_specs
from vigil.stack.components_sharded import backfill_shards, sharded_component_specs
from vigil.stack.history import backfill_simulated_history
from vigil.stack.runstate import ComponentState, StackState, record_stopped
from vigil.stack.settings import StackSettings
from vigil.stack.config import RunLayout, ensure_demo_password, write_stack_files
from vigil.stack.config.demo_oncall import DEMO_CONSOLE_USER
from vigil.stack.config.ha import HaTopology
from vigil.stack.config.postgres import PostgresUnavailable
from vigil.stack.supervisor import Supervisor, taken_ports

log = logging.getLogger("vigil.stack.run")

PROFILE_SPECS = {"single": component_specs, "ha": ha_component_specs, "sharded": sharded_component_specs}


def sim_banner(nodes: int, gpus: int) -> str:
    """The loud notice that the metrics are synthetic."""
    lines = ["No NVIDIA GPU/driver found: running the SIMULATED GPU fleet",
             f"({nodes} nodes x {gpus} GPUs). Metrics are synthetic; break things with",
             "`vigil chaos inject` or `vigil drill`."]
    width = max(len(line) for line in lines) + 4
    border = "*" * (width + 2)
    return "\n".join(["", border, *(f"*  {line:<{width - 2}}*" for line in lines), border])


class StackError(Exception):
    """The stack cannot start; the message says why and what to do."""


def already_running(layout: RunLayout) -> str:
    return f"a stack is already running in {layout.root}; stop it with: vigil down --run-dir {layout.root}"


def lock_run_dir(layout: RunLayout):
    layout.root.mkdir(parents=True, exist_ok=True)
    handle = open(layout.lock_file, "a+")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.close()
        raise StackError(already_running(layout)) from None
    return handle


def url_table(state: StackState) -> str:
    width = max(len(n) for n in state.components)
    lines = [f"{'component':<{width}}  url"]
    lines += [f"{name:<{width}}  {c.url}" for name, c in state.components.items()]
    return "\n".join(lines)


def console_hint(settings: StackSettings, layout: RunLayout, state: StackState, reveal: bool = True) -> str:
    """Where the web console is and how to log in (the demo's login, or how to get one). Without `reveal`
    (a line that goes to a log file) the demo password is not said, only the owner-only file holding it."""
    notifier = state.components.get("notifier")
    if notifier is None:
        return ""
    if settings.oncall_config is None and not reveal:
        login = f"log in as {DEMO_CONSOLE_USER} with the password in {layout.demo_password_file} (owner-only)"
    elif settings.oncall_config is None:
        login = demo_login(layout)
    else:
        login = ("log in as a person of your on-call file who has a password_hash (vigil oncall hash-password), "
                 f"or with the API token in {layout.token_file}")
    return f"\n\nweb console: {notifier.url}/console/\n  {login}"


def demo_login(layout: RunLayout) -> str:
    """The demo's console login as the terminal shows it (never a log file: the password is in it)."""
    return (f"log in as {DEMO_CONSOLE_USER}, password {ensure_demo_password(layout)} "
            f"(kept in {layout.demo_password_file})")


def run_stack(settings: StackSettings, gpu_backend: str, say: Callable[[str], None], health_timeout_s: float = 90.0,
              detached: bool = False, on_up: Callable[[StackState, Callable[[str], None]], None] | None = None) -> int:
    """Run the whole stack until SIGINT/SIGTERM. Returns the process exit code.

    `say` tells the user what happens, one step at a time; with `detached` (the background child of
    `vigil up --detach`) it writes to the log the parent shows while it waits. `on_up(state, say)` runs
    once every component is healthy, before the stack counts as ready (`vigil up --grafana-url`
    provisions Grafana there); it reports its own failures and must not raise.
    """
    layout = RunLayout(settings.run_path)
    binaries = find_binaries(settings.profile)
    if settings.oncall_config is not None:
        try:  # refuse now, with file:line, rather than as an unhealthy notifier a minute later
            load_oncall(settings.oncall_config)
        except OncallConfigError as exc:
            raise StackError(str(exc)) from None
    lock = lock_run_dir(layout)
    backend: GpuBackend = detect_gpu_backend(settings, gpu_backend)
    try:
        specs = PROFILE_SPECS[settings.profile](settings, layout, binaries, backend)
    except PostgresUnavailable as exc:
        raise StackError(str(exc)) from None
    conflicts = taken_ports(specs)
    if conflicts:
        listed = ", ".join(f"{port} ({name})" for name, port in conflicts)
        raise StackError(f"ports already in use: {listed}\n  another stack or program holds them; "
                         f"choose another base with --port-base (now {settings.port_base})")
    if backend.kind == "sim":
        say(sim_banner(settings.sim_nodes, settings.sim_gpus))
    try:
        write_stack_files(settings, layout, backend.node_names)
    except PostgresUnavailable as exc:
        raise StackError(str(exc)) from None
    if settings.aiops and backend.kind == "sim":
        if settings.backfill_days > 0:
            say(f"history backfill: {settings.backfill_days:g} day(s) of simulated GPU load into Prometheus …")
        backfill = backfill_shards if settings.profile == "sharded" else backfill_simulated_history
        say(backfill(settings, layout, binaries, backend.node_names))

    stop_requested = False

    def request_stop(signum, _frame):
        nonlocal stop_requested
        stop_requested = True

    signal.signal(signal.SIGINT, request_stop)
    signal.signal(signal.SIGTERM, request_stop)

    supervisor = Supervisor(specs, layout.logs_dir)
    urls = {"gpu_control": http_url(settings.host, settings.ports.gpu_control)} if backend.kind == "sim" else {}
    if settings.profile in ("ha", "sharded"):  # the global query view: every replica's or shard's series
        urls["metrics_query"] = HaTopology(settings).victoria_metrics_url
    state = StackState(supervisor_pid=os.getpid(), port_base=settings.port_base, gpu_backend=backend.kind, urls=urls)
    try:
        say(f"starting {len(specs)} components (logs in {layout.logs_dir}) …")
        supervisor.start()
        state.components = {s.name: ComponentState(s.url, s.health_url, pid)
                            for s, pid in zip(specs, supervisor.pids().values()) if not s.oneshot}
        state.write(layout)
        unhealthy = supervisor.wait_healthy(health_timeout_s, on_progress=lambda name: say(f"  {name} is healthy"))
        if stop_requested:
            return 130
        if unhealthy:
            say(f"not healthy after {health_timeout_s:.0f}s: {', '.join(unhealthy)} (see {layout.logs_dir}/<name>.log)")
            return 1
        stop_hint = "" if detached else "Ctrl-C or: "
        say("\nvigil stack is up:\n" + url_table(state) + console_hint(settings, layout, state, reveal=not detached) + f"\n\nrun dir: {layout.root}    stop with {stop_hint}vigil down --run-dir {layout.root}")
        if on_up is not None:
            on_up(state, say)
        state.ready = True  # after the table was said: `vigil up --detach` shows the log up to here
        state.write(layout)
        restarts = supervisor.restarts()
        while not stop_requested:
            supervisor.poll()
            if supervisor.restarts() != restarts:
                restarts = supervisor.restarts()
                for name, pid in supervisor.pids().items():
                    if name in state.components:
                        state.components[name].pid = pid
                state.write(layout)
            time.sleep(0.3)
        say("stopping …")
        return 0
    finally:
        supervisor.stop()
        record_stopped(layout, settings.oncall_config or layout.oncall_config)
        layout.state_file.unlink(missing_ok=True)
        lock.close()
        say("stopped")
