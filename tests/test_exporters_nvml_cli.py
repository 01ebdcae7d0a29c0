"""`vigil exporter gpu` as a user runs it: a subprocess, real ports, SIGTERM, bad flags."""

from __future__ import annotations

import subprocess
import time

import pytest
import requests
from exporters_nvml_support import VIGIL_GPU, free_ports, run_until_ready, stop, wait_until

from vigil.common.ports import free_port
from vigil.exporters.sim.dcgm_page import PageServer, render_page


def nvml_available() -> bool:
    import pynvml

    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError:
        return False
    pynvml.nvmlShutdown()
    return True


def test_cli_runs_the_fleet_and_exits_cleanly_on_sigterm() -> None:
    base = free_ports(3)
    proc = run_until_ready(["--backend", "sim", "--sim-nodes", "2", "--sim-gpus", "2", "--listen", f"127.0.0.1:{base}",
                            "--control-listen", f"127.0.0.1:{base + 2}", "--interval", "0.2"],
                           f"http://127.0.0.1:{base + 2}/healthz")
    try:
        assert 'node="node-2"' in requests.get(f"http://127.0.0.1:{base + 1}/metrics", timeout=5).text
    finally:
        stop(proc)


def test_cli_fleet_runs_simulated_jobs_by_default_and_none_with_sim_jobs_0() -> None:
    for jobs, expected in ((None, True), ("0", False)):
        base = free_ports(4)
        argv = ["--backend", "sim", "--sim-nodes", "3", "--sim-gpus", "8", "--listen", f"127.0.0.1:{base}",
                "--control-listen", f"127.0.0.1:{base + 3}", "--interval", "0.2"] + (["--sim-jobs", jobs] if jobs else [])
        proc = run_until_ready(argv, f"http://127.0.0.1:{base + 3}/healthz")
        try:
            node_1, node_3 = (requests.get(f"http://127.0.0.1:{base + i}/metrics", timeout=5).text for i in (0, 2))
        finally:
            stop(proc)
        # node-1 holds two job slots half a period apart, so one of them runs at any moment
        assert ("vigil_gpu_job{" in node_1 and "vigil_job_info{" in node_1) is expected
        assert "vigil_gpu_job{" not in node_3  # the last node never hosts simulated jobs


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
    result = subprocess.run(VIGIL_GPU + ["--backend", "nvml", "--listen", f"127.0.0.1:{free_port()}"],
                            capture_output=True, timeout=30)
    assert result.returncode == 1
    assert b"NVML is not usable on this machine" in result.stderr and b"Traceback" not in result.stderr


def test_dcgm_backend_bridges_a_dcgm_exporter_page_and_outlives_a_hung_one() -> None:
    page = PageServer(lambda: render_page("gpu-host-7", gpus=2))
    port = free_port()
    metrics = f"http://127.0.0.1:{port}/metrics"
    try:
        proc = run_until_ready(["--backend", "dcgm", "--dcgm-url", page.url, "--node", "gpu-host-7",
                                "--listen", f"127.0.0.1:{port}", "--interval", "200ms", "--dcgm-timeout", "500ms",
                                "--expected-gpus", "2"], metrics)
        try:
            wait_until(lambda: 'vigil_gpu_up{' in requests.get(metrics, timeout=5).text, timeout=10, step=0.2)
            body = requests.get(metrics, timeout=5).text
            assert 'node="gpu-host-7"' in body and "vigil_gpu_temperature_celsius{" in body
            assert 'dcgm_up{node="gpu-host-7"} 1.0' in body
            assert 'vigil_node_gpus_visible{node="gpu-host-7"} 2.0' in body
            assert 'vigil_node_gpus_expected{node="gpu-host-7"} 2.0' in body
            page.hang()  # dcgm-exporter accepts our reads and never answers
            wait_until(lambda: 'dcgm_up{node="gpu-host-7"} 0.0' in requests.get(metrics, timeout=5).text,
                       timeout=10, step=0.1)
            for _ in range(5):
                started = time.monotonic()
                body = requests.get(metrics, timeout=5).text
                assert time.monotonic() - started < 1.0, "a scrape waited for the hung dcgm-exporter"
            assert 'vigil_node_gpus_visible{node="gpu-host-7"} 0.0' in body and "vigil_gpu_up{" not in body
            assert 'vigil_exporter_dcgm_errors_total{node="gpu-host-7",reason="timeout"} 0.0' not in body
            page.answer()
            wait_until(lambda: 'dcgm_up{node="gpu-host-7"} 1.0' in requests.get(metrics, timeout=5).text,
                       timeout=10, step=0.1)
            assert "vigil_gpu_temperature_celsius{" in requests.get(metrics, timeout=5).text
        finally:
            stop(proc)
    finally:
        page.close()


def test_dcgm_backend_rejects_a_bad_url() -> None:
    result = subprocess.run(VIGIL_GPU + ["--backend", "dcgm", "--dcgm-url", "localhost:9400",
                                         "--listen", f"127.0.0.1:{free_port()}"], capture_output=True, timeout=30)
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
