"""`vigil down`: stop the stack running in a run directory, idempotently, like `docker compose down`.

Nothing running there is not an error: it is said on one line. A state file left by a supervisor that
died without cleaning up (killed, out of memory) is removed, under the run directory's lock so that a
stack starting meanwhile cannot lose its own. What stays an error: a supervisor that cannot be signalled
or does not stop in time, and a stack that is starting (it holds the lock but has no state file yet).
The supervisor, on its way out, writes when it stopped to `<run-dir>/stopped.json` (`runstate.record_stopped`):
`vigil postmortem` on the stopped stack measures an incident still open then up to that moment.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import Callable

from vigil.stack.runstate import NoStack, pid_alive, read_state, supervisor_holds_lock
from vigil.stack.run import StackError, lock_run_dir
from vigil.stack.config import RunLayout

POLL_S = 0.2


class StopFailed(Exception):
    """A stack runs in the run directory but was not stopped; the message says why."""


def stop_stack(run_dir: Path, timeout_s: float, clock: Callable[[], float] = time.monotonic,
               sleep: Callable[[float], None] = time.sleep) -> str:
    """Stop the stack in `run_dir` and return the line that says what was done; StopFailed if it runs on."""
    layout = RunLayout(run_dir.resolve())
    if not layout.state_file.exists():
        # check the lock only where one was ever taken: a never-started run directory is left as it is
        if layout.lock_file.exists() and supervisor_holds_lock(layout):
            raise StopFailed(_starting(run_dir))
        return f"no vigil stack is running in {run_dir}; nothing to stop"
    try:
        state = read_state(run_dir)
    except NoStack as gone:
        return _remove_stale_state(layout, run_dir, str(gone))
    pid = state.supervisor_pid
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        pass  # it exited since read_state looked: stopped all the same
    except PermissionError:
        raise StopFailed(f"cannot signal the supervisor (pid {pid}) of the stack in {run_dir}: "
                         "permission denied (it runs as another user)") from None
    deadline = clock() + timeout_s
    while pid_alive(pid) and clock() < deadline:
        sleep(POLL_S)
    if pid_alive(pid):
        raise StopFailed(f"the supervisor (pid {pid}) did not stop within {timeout_s:g}s; "
                         f"see {layout.logs_dir / 'supervisor.log'}, or run vigil down again with a longer --timeout")
    return f"stopped the stack in {run_dir}"


def _remove_stale_state(layout: RunLayout, run_dir: Path, why: str) -> str:
    """Remove the state file of a supervisor that is gone, holding the lock a starting stack would take."""
    try:
        lock = lock_run_dir(layout)
    except StackError:  # a new supervisor took the lock since: its state file is about to be written
        raise StopFailed(f"{why}, yet a supervisor holds the run directory's lock now (a stack starting?); "
                         f"run vigil down --run-dir {run_dir} again once it is up") from None
    try:
        layout.state_file.unlink(missing_ok=True)
    except OSError as exc:
        raise StopFailed(f"{why}; cannot remove its stale state file {layout.state_file}: {exc.strerror}") from None
    finally:
        lock.close()
    return f"{why}: removed its stale state file {layout.state_file}; nothing to stop"


def _starting(run_dir: Path) -> str:
    return (f"a stack is starting in {run_dir} (its supervisor holds the run directory's lock but has not written "
            f"its state yet); run vigil down --run-dir {run_dir} again once it is up")
