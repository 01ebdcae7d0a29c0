"""bench/exporters/real_gpu.py away from a GPU: its refusal, and its report with the simulator as NVML."""

from __future__ import annotations

import subprocess
import sys

import pytest
from bench_support import BENCH, load_bench

from vigil.exporters.nvml_collector import NvmlCollector
from vigil.exporters.sim.nvml import SimulatedNvml

real_gpu = load_bench("exporters/real_gpu.py")


def test_without_a_driver_it_says_so_and_exits_2(tmp_path) -> None:
    try:
        import pynvml
        pynvml.nvmlInit()
    except Exception:
        pass
    else:
        pynvml.nvmlShutdown()
        pytest.skip("this machine has an NVIDIA driver: the benchmark would run for real")
    run = subprocess.run([sys.executable, str(BENCH / "exporters" / "real_gpu.py"), "--out", str(tmp_path / "out")],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 2
    assert "needs a real GPU" in run.stderr and "Traceback" not in run.stderr
    assert not (tmp_path / "out").exists()


def test_the_cost_splits_driver_time_from_ours_and_names_each_refusal() -> None:
    sim = SimulatedNvml("node-1", 2, unsupported=frozenset({"nvmlDeviceGetFanSpeed"}))
    cost = real_gpu.nvml_cost(5, sim)
    assert 0 < cost["nvml_ms"] < cost["cycle_ms"]
    assert "nvmlDeviceGetFieldValues" in cost["per_function"]
    # refused in the first cycle (not timed) and not asked again: no error left in the timed cycles
    assert "nvmlDeviceGetFanSpeed" not in cost["per_function"] and cost["errors"] == []


def test_the_summary_compares_idle_load_and_simulator() -> None:
    def page(sim: SimulatedNvml) -> dict:
        collector = NvmlCollector(sim, "node-1", watch_xids=False)
        collector.refresh()
        return real_gpu.families(collector.exposition().decode())

    real = page(SimulatedNvml("node-1", 1, unsupported=frozenset({"nvmlDeviceGetFanSpeed"})))
    sim = page(SimulatedNvml("node-1", 1))
    info = {"gpu": "G", "gpus": "1", "driver": "d", "nvml": "n", "pynvml": "p", "kernel": "k", "cpus": "2"}
    cost = real_gpu.nvml_cost(2, SimulatedNvml("node-1", 1))
    text = real_gpu.summary(info, cost, real, None, sim)
    assert "| `vigil_gpu_power_watts` |" in text and "| — |" in text  # no load capture: a dash
    assert "Only in the simulator: `vigil_gpu_fan_speed_ratio`" in text


def test_the_timing_proxy_names_each_refusal_by_its_nvml_error() -> None:
    import pynvml

    timed = real_gpu.TimedNvml(SimulatedNvml("node-1", 1, unsupported=frozenset({"nvmlDeviceGetFanSpeed"})))
    timed.nvmlInit()
    handle = timed.nvmlDeviceGetHandleByIndex(0)
    with pytest.raises(pynvml.NVMLError):
        timed.nvmlDeviceGetFanSpeed(handle)
    assert timed.errors == {("nvmlDeviceGetFanSpeed", "not_supported"): 1}
    assert timed.per_function["nvmlDeviceGetFanSpeed"][0] == 1 and timed.calls == 3

