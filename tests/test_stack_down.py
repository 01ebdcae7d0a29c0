"""`vigil down` where no stack runs: nothing to stop is exit 0; a crashed supervisor's state file is
removed; a stack that is starting is not mistaken for none. Stopping a real stack, twice, and the
state a killed supervisor leaves are checked on the real stack in tests/test_stack_e2e.py."""

from __future__ import annotations

import fcntl
import subprocess

from click.testing import CliRunner

from vigil.cli import main
from vigil.stack.runstate import StackState
from vigil.stack.config import RunLayout


def down(run_dir, *args: str):
    result = CliRunner().invoke(main, ["down", "--run-dir", str(run_dir), *args])
    assert "Traceback" not in result.output
    return result


def gone_pid() -> int:
    """The pid of a process that has exited (and been reaped), like a crashed supervisor's."""
    process = subprocess.Popen(["true"])
    process.wait()
    return process.pid


def crashed_stack(run_dir) -> tuple[RunLayout, int]:
    """The run directory a supervisor killed with SIGKILL leaves (its state file, its lock file unlocked),
    and the pid the state names."""
    layout = RunLayout(run_dir)
    layout.root.mkdir(parents=True)
    layout.lock_file.touch()
    pid = gone_pid()
    StackState(supervisor_pid=pid, port_base=9600, gpu_backend="sim", ready=True).write(layout)
    return layout, pid


def test_a_run_dir_never_started_has_nothing_to_stop_and_is_left_as_it_was(tmp_path):
    missing = down(tmp_path / "never")
    assert (missing.exit_code, missing.output) == (0, f"no vigil stack is running in {tmp_path / 'never'}; nothing to stop\n")
    assert not (tmp_path / "never").exists()
    empty = down(tmp_path)
    assert (empty.exit_code, empty.output) == (0, f"no vigil stack is running in {tmp_path}; nothing to stop\n")
    assert list(tmp_path.iterdir()) == []


def test_the_state_file_of_a_crashed_supervisor_is_removed_then_there_is_nothing_to_stop(tmp_path):
    layout, pid = crashed_stack(tmp_path / "run")
    first = down(layout.root)
    assert first.exit_code == 0, first.output
    assert first.output == (f"the stack in {layout.root} is not running (its supervisor, pid {pid}, is gone): "
                            f"removed its stale state file {layout.state_file}; nothing to stop\n")
    assert not layout.state_file.exists()
    second = down(layout.root)
    assert (second.exit_code, second.output) == (0, f"no vigil stack is running in {layout.root}; nothing to stop\n")


def test_an_unreadable_state_file_nobody_holds_is_removed(tmp_path):
    layout = RunLayout(tmp_path)
    layout.state_file.write_text("{half a fi")
    result = down(tmp_path)
    assert result.exit_code == 0 and f"cannot read {layout.state_file}" in result.output
    assert "removed its stale state file" in result.output and not layout.state_file.exists()


def test_a_stack_starting_holds_the_lock_before_its_state_file_and_is_not_taken_for_none(tmp_path):
    layout = RunLayout(tmp_path)
    with open(layout.lock_file, "a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # what `vigil up` holds from before its backfill
        result = down(tmp_path)
    assert result.exit_code == 1
    assert result.output.startswith(f"Error: a stack is starting in {tmp_path}") and result.output.count("\n") == 1


def test_a_stale_state_file_is_kept_while_a_new_supervisor_holds_the_lock(tmp_path):
    layout, _ = crashed_stack(tmp_path / "run")
    with open(layout.lock_file, "a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # a new `vigil up` took the run directory; it rewrites the state
        result = down(layout.root)
    assert result.exit_code == 1 and "a supervisor holds the run directory's lock now" in result.output, result.output
    assert layout.state_file.exists()
