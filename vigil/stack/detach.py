"""`vigil up --detach`: start the stack in the background, show what it says while it starts, return
once it is up.

The background child is `vigil up` itself; everything it says (the simulated-fleet banner, the history
backfill, each component turning healthy, the URL table) goes to `logs/supervisor.log`. The parent
follows that log from where this run began and echoes each line once, so a user sees the same lines as
in the foreground, and the log keeps them.
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path
from typing import Callable

from vigil.stack.components import vigil_argv
from vigil.stack.runstate import NoStack, read_state, supervisor_holds_lock
from vigil.stack.run import StackError, already_running, demo_login
from vigil.stack.config import RunLayout

DETACHED_CHILD_FLAG = "--detached-child"  # hidden option of `vigil up`: "you are the background child"
POLL_S = 0.3


class LogFollower:
    """The lines appended to a log file after `offset`, each handed out once."""

    def __init__(self, path: Path, offset: int):
        self.path = path
        self.offset = offset

    def new_lines(self, final: bool = False) -> list[str]:
        """Complete lines written since the last call; with `final`, an unterminated last line too."""
        try:
            with open(self.path, "rb") as log:
                log.seek(self.offset)
                data = log.read()
        except FileNotFoundError:
            return []
        if not final:
            data = data[: data.rfind(b"\n") + 1]
        self.offset += len(data)
        return data.decode(errors="replace").splitlines()


def start_detached(argv: list[str], run_path: Path, timeout_s: float, say: Callable[[str], None],
                   clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep) -> None:
    """Start `vigil up ARGV` in the background and echo its progress until it is up; StackError if not."""
    layout = RunLayout(run_path)
    if supervisor_holds_lock(layout):  # refused here, before anything is started or written to its log
        raise StackError(already_running(layout))
    layout.logs_dir.mkdir(parents=True, exist_ok=True)
    log_path = layout.logs_dir / "supervisor.log"
    follower = LogFollower(log_path, log_path.stat().st_size if log_path.exists() else 0)
    say(f"starting the stack in the background (its log: {log_path}) …")
    with open(log_path, "ab") as log_file:
        child = subprocess.Popen(vigil_argv(*[a for a in argv if a != "--detach"], DETACHED_CHILD_FLAG),
                                 stdin=subprocess.DEVNULL, stdout=log_file, stderr=subprocess.STDOUT, start_new_session=True)
    deadline = clock() + timeout_s + 60  # the backfill and the health waits happen inside the child
    demo_hint = f"with the password in {layout.demo_password_file}"

    def echo(line: str) -> None:
        say(line)
        if demo_hint in line:  # the child logs where the demo password is; the terminal gets it, below
            say(f"  {demo_login(layout)}")

    while clock() < deadline:
        for line in follower.new_lines():
            echo(line)
        if child.poll() is not None:
            for line in follower.new_lines(final=True):
                say(line)
            raise StackError(f"the stack did not start (exit code {child.returncode}; full log: {log_path})")
        if _is_up(run_path, child.pid):
            for line in follower.new_lines(final=True):  # the child said its URL table before it wrote "ready"
                echo(line)
            return
        sleep(POLL_S)
    raise StackError(f"the stack was not healthy within {timeout_s:.0f}s; see {log_path}")


def _is_up(run_path: Path, pid: int) -> bool:
    try:
        state = read_state(run_path)
    except NoStack:
        return False
    return state.ready and state.supervisor_pid == pid
