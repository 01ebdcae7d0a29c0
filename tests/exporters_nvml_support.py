"""Helpers shared by the GPU exporter tests (test_exporters_nvml_*, test_exporters_fleet_*)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import requests

from vigil.common.ports import free_ports  # noqa: F401  (the exporter tests import it from here)

VIGIL_GPU = [sys.executable, "-m", "vigil.cli", "exporter", "gpu"]


def wait_until(predicate, timeout: float = 5.0, step: float = 0.05) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "condition not reached in time"
        time.sleep(step)


def answers(url: str) -> bool:
    try:
        return requests.get(url, timeout=1).ok
    except requests.ConnectionError:
        return False


def run_until_ready(args: list[str], ready_url: str):
    """Start the exporter, wait until `ready_url` answers; the caller stops it with `stop()`."""
    proc = subprocess.Popen(VIGIL_GPU + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        wait_until(lambda: answers(ready_url) or proc.poll() is not None, timeout=30, step=0.2)
    except AssertionError:
        stop(proc)
        raise
    assert proc.poll() is None, proc.communicate()[1].decode()
    return proc


def stop(proc) -> bytes:
    proc.send_signal(signal.SIGTERM)
    _out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err.decode()
    assert b"Traceback" not in err
    return err

