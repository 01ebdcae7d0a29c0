"""Helpers to run a real vigil stack from tests through the CLI, as a user would."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from vigil.common.ports import free_port_base  # the stack tests' port ranges come from here

FAST_STACK = """\
stack:
  scrape_interval: 1
  evaluation_interval: 1
  exporter_interval: 0.5
  group_wait: 1
  group_interval: 1
  resend_delay: 1
  max_for: 2
  resolve_after: 0
  sim_nodes: {nodes}
  sim_gpus: {gpus}
  sim_jobs: {jobs}
  aiops: {aiops}
  backfill_days: {backfill_days}
  node_health: {node_health}
"""


# the installed entry point, as a user runs it (not `python -m`, which would put the cwd on sys.path)
VIGIL = str(Path(sys.executable).with_name("vigil"))
SHADOWING_FOLDERS = ("vigil", "rules", "exporters", "notifier", "oncall", "aiops")


def vigil(*args: str, timeout: float = 120, check: bool = False, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([VIGIL, *args], capture_output=True, text=True, timeout=timeout, check=check, cwd=cwd)


def shadowing_workdir(root: Path) -> Path:
    """A directory like a rule author's repository: folders named like vigil's packages, whose import fails.

    A command run from here that imports any of them instead of the installed package breaks loudly.
    """
    root.mkdir(parents=True, exist_ok=True)
    for name in SHADOWING_FOLDERS:
        (root / name).mkdir(exist_ok=True)
        (root / name / "__init__.py").write_text(
            f"raise ImportError('the user folder {name}/ in the current directory was imported instead of vigil')\n")
    return root


class RunningStack:
    def __init__(self, run_dir: Path, port_base: int, started: subprocess.CompletedProcess | None = None):
        self.run_dir = run_dir
        self.port_base = port_base
        self.started = started  # what `vigil up --detach` printed and returned

    def cli(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
        return vigil(*args, "--run-dir", str(self.run_dir), timeout=timeout)

    def state(self) -> dict:
        return json.loads((self.run_dir / "state.json").read_text())

    def token(self) -> str:
        return (self.run_dir / "secrets" / "webhook-token").read_text().strip()

    def url(self, component: str) -> str:
        return self.state()["components"][component]["url"]


def start_stack(tmp: Path, *, nodes: int = 3, gpus: int = 4, aiops: bool = False, node_health: bool = True,
                backfill_days: float = 0, cwd: Path | None = None, jobs: int = 0, args: tuple[str, ...] = (),
                settings: dict | None = None) -> RunningStack:
    """`jobs`: simulated training jobs, off unless a test asks: a job that hangs or ends during a test
    would page (JobHung) or move the AIOps baselines of its GPUs under a test that checks something else.
    `args`: more options of `vigil up`; `settings`: more `stack:` settings (an `oncall_config` …)."""
    config = tmp / "vigil.yaml"
    config.write_text(FAST_STACK.format(nodes=nodes, gpus=gpus, jobs=jobs, aiops=str(aiops).lower(),
                                        node_health=str(node_health).lower(), backfill_days=backfill_days)
                      + "".join(f"  {key}: {json.dumps(str(value))}\n" for key, value in (settings or {}).items()))
    # a range free when picked can be taken by a stack another test worker starts at the same moment
    # (CI on 57cb604: both picked 19300); `vigil up` then refuses with "ports already in use" before
    # starting anything, and another range is picked
    for attempt in range(3):
        base = free_port_base()
        run_dir = tmp / ("run" if attempt == 0 else f"run-{attempt + 1}")
        result = vigil("up", "--detach", "--config", str(config), "--run-dir", str(run_dir), "--port-base", str(base),
                       "--gpu-backend", "sim", *args, timeout=300, cwd=cwd)
        if "ports already in use" not in result.stdout + result.stderr:
            break
    if result.returncode != 0:
        logs = "\n".join(f"--- {p.name}\n{p.read_text(errors='replace')[-3000:]}" for p in sorted((run_dir / "logs").glob("*.log")))
        raise AssertionError(f"vigil up --detach failed:\n{result.stdout}\n{result.stderr}\n{logs}")
    return RunningStack(run_dir, base, started=result)


def wait_for(condition, what: str, timeout: float = 40.0):
    """Poll `condition` every half second until it returns something truthy, and return that; fail the
    test naming `what` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not (found := condition()):
        assert time.monotonic() < deadline, f"no {what} within {timeout:.0f}s"
        time.sleep(0.5)
    return found
