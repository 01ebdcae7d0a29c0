"""The state file a running stack leaves in its run directory, and how other commands find the stack.

`vigil status`, `down`, `chaos`, `drill` and `inbox` read `<run-dir>/state.json`, so two stacks on
different port bases and run directories never see each other.
"""

from __future__ import annotations

import fcntl
import json
import os
import time
from contextlib import suppress
from dataclasses import asdict, dataclass, field
from pathlib import Path

from vigil.common.times import rfc3339

from vigil.stack.config import RunLayout


class NoStack(Exception):
    """No running stack was found in the run directory; `reason` says why without the advice."""

    def __init__(self, message: str, reason: str | None = None):
        super().__init__(message)
        self.reason = reason or message


@dataclass
class ComponentState:
    url: str
    health_url: str
    pid: int | None = None


@dataclass
class StackState:
    supervisor_pid: int
    port_base: int
    gpu_backend: str
    ready: bool = False
    components: dict[str, ComponentState] = field(default_factory=dict)
    urls: dict[str, str] = field(default_factory=dict)  # API endpoints other commands use

    def write(self, layout: RunLayout) -> None:
        tmp = layout.state_file.with_suffix(".tmp")
        tmp.write_text(json.dumps(asdict(self), indent=2, sort_keys=True) + "\n")
        os.replace(tmp, layout.state_file)  # atomic: readers never see half a file


def record_stopped(layout: RunLayout, oncall_config: Path | None = None) -> None:
    """Write when the stack stopped (now) for the postmortems written after, and the on-call file its notifier
    ran with for the reports (`vigil.stack.stopped`): the supervisor does on its way out, however it was asked
    to stop (`vigil down`, Ctrl-C, SIGTERM)."""
    with suppress(OSError):  # a record for postmortems, not worth failing a stop that happened
        record = {"stopped_at": rfc3339(time.time())}
        if oncall_config is not None:
            record["oncall_config"] = str(oncall_config.absolute())
        layout.stopped_file.write_text(json.dumps(record) + "\n")


def pid_alive(pid: int) -> bool:
    """True if the process exists and is not a zombie (a killed, unreaped supervisor is not running)."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, IndexError):
        return False


def supervisor_holds_lock(layout: RunLayout) -> bool:
    """The running supervisor holds an exclusive lock on the run directory for its whole life."""
    try:
        with open(layout.lock_file, "a+") as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return True
            fcntl.flock(handle, fcntl.LOCK_UN)
            return False
    except OSError:
        return False


def read_state(run_dir: Path) -> StackState:
    """The state of the stack running in `run_dir`, or NoStack with a message saying what to do."""
    layout = RunLayout(run_dir.resolve())
    try:
        raw = json.loads(layout.state_file.read_text())
    except FileNotFoundError:
        raise NoStack(f"no vigil stack is running in {run_dir} (start one with: vigil up --run-dir {run_dir})",
                      f"no vigil stack is running in {run_dir}") from None
    except (OSError, json.JSONDecodeError) as exc:
        raise NoStack(f"cannot read {layout.state_file}: {exc}") from None
    state = StackState(**{**raw, "components": {k: ComponentState(**v) for k, v in raw.get("components", {}).items()}})
    if not pid_alive(state.supervisor_pid) or not supervisor_holds_lock(layout):
        raise NoStack(f"the stack in {run_dir} is not running (its supervisor, pid {state.supervisor_pid}, is gone)")
    return state


def read_token(run_dir: Path) -> str:
    layout = RunLayout(run_dir.resolve())
    try:
        return layout.token_file.read_text().strip()
    except OSError as exc:
        raise NoStack(f"cannot read the webhook token {layout.token_file}: {exc.strerror}") from None
