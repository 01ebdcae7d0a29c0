"""The processes the notifier benchmark measures: a real `vigil notifier serve` and a real Alertmanager,
each on a free port, and the CPU seconds a process tree has used (from /proc)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import requests

from vigil.common.ports import free_port

ROOT = Path(__file__).resolve().parents[2]
ALERTMANAGER = "/usr/bin/prometheus-alertmanager"
TOKEN = "bench-token-0123456789abcdef"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
# notifications labelled paged=yes page the inbox; every other notification is stored with nothing routed
ONCALL = ("targets:\n  demo-dri:\n    channels:\n      - type: inbox\n"
          "routes:\n  - match: {paged: \"yes\"}\n    notify: demo-dri\n")
# the escalation part: notifications labelled paged=yes open incidents on a two-tier policy (both tiers page
# the inbox); its P1 targets give every incident SLA due times the engine checks on every pass
ESCALATION_ONCALL = ("priorities:\n  P1: {ack_within: 2h, resolve_within: 8h}\n"
                     "people:\n  dri: {contacts: {phone: {inbox: true, kind: phone}}}\n"
                     "  senior: {contacts: {phone: {inbox: true, kind: phone}}}\n"
                     "policies:\n  gpu:\n    tiers:\n"
                     "      - {name: DRI, notify: [{person: dri}], escalate_after: 1h}\n"
                     "      - {name: senior, notify: [{person: senior}], escalate_after: 1h}\n"
                     "routes:\n  - {match: {paged: \"yes\"}, policy: gpu, priority: P1}\n")
AM_CONFIG = "route:\n  receiver: blackhole\n  group_wait: 1h\nreceivers:\n  - name: blackhole\n"


def wait_ready(url: str, process: subprocess.Popen) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"{process.args[0]} exited with {process.returncode}")
        try:
            if requests.get(url, timeout=1).status_code == 200:
                return
        except requests.ConnectionError:
            pass
        time.sleep(0.1)
    raise SystemExit(f"{url} not ready")


def prepare_notifier_dir(folder: Path, oncall: str = ONCALL) -> str:
    """Token and on-call (`oncall`) files in `folder`; returns the SQLite URL of its database."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "token").write_text(TOKEN + "\n")
    (folder / "oncall.yaml").write_text(oncall)
    return f"sqlite:///{folder / 'notifier.db'}"


@contextmanager
def notifier(folder: Path, db_url: str, workers: int = 1, oncall: str = ONCALL):
    """A running `vigil notifier serve` (its base URL and pid) on the database `db_url`."""
    prepare_notifier_dir(folder, oncall)
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    command = [sys.executable, "-m", "vigil.cli", "notifier", "serve", "--listen", f"127.0.0.1:{port}",
               "--db", db_url, "--token-file", str(folder / "token"), "--oncall-config",
               str(folder / "oncall.yaml"), "--log-level", "warning"]
    if workers > 1:
        command += ["--workers", str(workers)]
    log = (folder / "notifier.log").open("w")
    process = subprocess.Popen(command, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_ready(url + "/healthz", process)
        if workers > 1:
            _wait_workers(process.pid, workers)
        yield url, process.pid
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(60)
        log.close()


def _wait_workers(pid: int, workers: int) -> None:
    """uvicorn's children answer /healthz one by one: wait until all of them are up (their CPU settles)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and len(process_tree(pid)) < workers + 1:
        time.sleep(0.2)
    time.sleep(3)


@contextmanager
def alertmanager(folder: Path):
    """A running Alertmanager (in memory, no cluster): its base URL and pid."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "am.yml").write_text(AM_CONFIG)
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    process = subprocess.Popen([ALERTMANAGER, f"--config.file={folder / 'am.yml'}",
                                f"--storage.path={folder / 'am'}", f"--web.listen-address=127.0.0.1:{port}",
                                "--cluster.listen-address=", "--log.level=warn"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_ready(url + "/-/ready", process)
        yield url, process.pid
    finally:
        process.terminate()
        process.wait(30)


def process_tree(pid: int) -> list[int]:
    """`pid` and all its descendants."""
    parents: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            parent = int(stat.rsplit(")", 1)[1].split()[1])
            parents.setdefault(parent, []).append(int(entry))
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        todo.extend(parents.get(current, []))
    return found


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds used so far by `pid` and its living descendants."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for member in process_tree(pid):
        try:
            fields = Path(f"/proc/{member}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / tick
    return total
