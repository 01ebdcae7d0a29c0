"""`vigil exporter gpu` as a user runs it: a subprocess, real ports, SIGTERM, bad flags."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest
import requests
from exporters_nvml_support import answers, free_ports, wait_until

from vigil.exporters.sim.dcgm_page import PageServer, render_page

VIGIL_GPU = [sys.executable, "-m", "vigil.cli", "exporter", "gpu"]


def nvml_available() -> bool:
    import pynvml

    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError:
        return False
    pynvml.nvmlShutdown()
    return True


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


def test_cli_runs_the_fleet_and_exits_cleanly_on_sigterm() -> None:
    base = free_ports(3)
    proc = run_until_ready(["--backend", "sim", "--sim-nodes", "2", "--sim-gpus", "2", "--listen", f"127.0.0.1:{base}",
                            "--control-listen", f"127.0.0.1:{base + 2}", "--interval", "0.2"],
                           f"http://127.0.0.1:{base + 2}/healthz")
    try:
        assert 'node="node-2"' in requests.get(f"http://127.0.0.1:{base + 1}/metrics", timeout=5).text
    finally:
        stop(proc)


def test_cli_rejects_bad_listen_address() -> None:
    result = subprocess.run(VIGIL_GPU + ["--backend", "sim", "--listen", "nowhere"], capture_output=True, timeout=30)
    assert result.returncode == 2 and b"HOST:PORT" in result.stderr and b"Traceback" not in result.stderr


@pytest.mark.skipif(nvml_available(), reason="this machine has an NVIDIA driver")
def test_without_a_driver_the_default_is_the_simulated_fleet_with_a_loud_warning() -> None:
    base = free_ports(2)
    proc = run_until_ready(["--sim-nodes", "1", "--sim-gpus", "1", "--listen", f"127.0.0.1:{base}",
                            "--control-listen", f"127.0.0.1:{base + 1}"], f"http://127.0.0.1:{base}/metrics")
    err = stop(proc)
    assert b"WARNING: no NVIDIA GPU/driver found: running the SIMULATED fleet" in err


@pytest.mark.skipif(nvml_available(), reason="this machine has an NVIDIA driver")
def test_explicit_nvml_backend_without_a_driver_fails_clearly() -> None:
    result = subprocess.run(VIGIL_GPU + ["--backend", "nvml", "--listen", f"127.0.0.1:{free_ports(1)}"],
                            capture_output=True, timeout=30)
    assert result.returncode == 1
    assert b"NVML is not usable on this machine" in result.stderr and b"Traceback" not in result.stderr


def test_dcgm_backend_bridges_a_dcgm_exporter_page() -> None:
    page = PageServer(lambda: render_page("gpu-host-7", gpus=2))
    port = free_ports(1)
    try:
        proc = run_until_ready(["--backend", "dcgm", "--dcgm-url", page.url, "--node", "gpu-host-7",
                                "--listen", f"127.0.0.1:{port}", "--interval", "1"], f"http://127.0.0.1:{port}/metrics")
        try:
            wait_until(lambda: 'vigil_gpu_up{' in requests.get(f"http://127.0.0.1:{port}/metrics", timeout=5).text,
                       timeout=10, step=0.2)
            body = requests.get(f"http://127.0.0.1:{port}/metrics", timeout=5).text
            assert 'node="gpu-host-7"' in body and "vigil_gpu_temperature_celsius{" in body
        finally:
            stop(proc)
    finally:
        page.close()


def test_dcgm_backend_rejects_a_bad_url() -> None:
    result = subprocess.run(VIGIL_GPU + ["--backend", "dcgm", "--dcgm-url", "localhost:9400",
                                         "--listen", f"127.0.0.1:{free_ports(1)}"], capture_output=True, timeout=30)
    assert result.returncode == 2 and b"--dcgm-url" in result.stderr and b"Traceback" not in result.stderr


def test_sigterm_during_a_long_start_still_exits_cleanly() -> None:
    base = free_ports(2)
    proc = subprocess.Popen(VIGIL_GPU + ["--backend", "sim", "--sim-nodes", "300", "--single-port",
                                         "--listen", f"127.0.0.1:{base}", "--control-listen", f"127.0.0.1:{base + 1}"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    time.sleep(1.0)  # importing done, the fleet's first collection cycle under way
    assert proc.poll() is None
    err = stop(proc)
    assert b"simulated fleet" in err  # it finished starting, then shut down


def test_unknown_job_source_is_a_usage_error() -> None:
    result = subprocess.run(VIGIL_GPU + ["--backend", "nvml", "--job-sources", "slurm,lsf"], capture_output=True, timeout=30)
    assert result.returncode == 2 and b"unknown job source(s) 'lsf'" in result.stderr and b"Traceback" not in result.stderr
