"""The NVML exporter on a real NVIDIA GPU: what it exports idle and under load, and what NVML costs.

    python bench/exporters/real_gpu.py --out DIR [--cycles 100] [--load-seconds 60]

Needs a machine with an NVIDIA driver (it exits 2 without one). Writes to DIR:

- `idle.prom`, `load.prom`: `/metrics` of `vigil exporter gpu --backend nvml` (the real exporter, as
  a user runs it), read once the GPUs are idle and once while a matrix-product loop keeps GPU 0 busy
  and job attribution lists its process (PyTorch, when installed; else only `idle.prom`);
- `sim.prom`: the simulated exporter's `/metrics` for one node with as many GPUs, to compare families;
- `nvml.json`: the in-process figures: per collection cycle, the time inside NVML and in our code,
  calls per NVML function and their mean time, and every NVML error by function;
- `summary.md`: all of it as Markdown tables (what docs/exporters-real-gpu.md is written from).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path
from typing import Any

import requests
from prometheus_client.parser import text_string_to_metric_families

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from timed_nvml import TimedNvml  # noqa: E402  (bench/exporters/timed_nvml.py)

from vigil.common.ports import free_port  # noqa: E402

VIGIL = [sys.executable, "-m", "vigil.cli", "exporter", "gpu"]
HIDDEN_LABELS = {"node", "gpu", "uuid"}  # the same on every GPU 0 sample of one machine
LOAD = """
import sys, time, torch
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
b = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
end = time.monotonic() + float(sys.argv[1])
print("load running", flush=True)
while time.monotonic() < end:
    for _ in range(20):
        a @ b
    torch.cuda.synchronize()
"""


def families(text: str) -> dict[str, list[tuple[dict[str, str], float]]]:
    """{family name: [(labels, value)]} of an exposition (counters under their `_total` sample names)."""
    found: dict[str, list[tuple[dict[str, str], float]]] = {}
    for fam in text_string_to_metric_families(text):
        for sample in fam.samples:
            if sample.name.endswith("_created"):
                continue
            found.setdefault(sample.name, []).append((sample.labels, sample.value))
    return found


def nvml_cost(cycles: int, module: Any = None) -> dict:
    """Collection cycles in-process through a timing proxy of `module` (default: the real pynvml)."""
    from vigil.exporters.nvml_collector import NvmlCollector

    if module is None:
        import pynvml as module

    nvml = TimedNvml(module)
    collector = NvmlCollector(nvml, "real", watch_xids=False)
    collector.refresh()  # first cycle: handles, static facts (memoized)
    first = {"calls": nvml.calls, "ms": 1000 * nvml.spent}
    nvml.reset()
    started = time.perf_counter()
    for _ in range(cycles):
        collector.refresh()
    total = time.perf_counter() - started
    per_function = {name: {"calls_per_cycle": n / cycles, "mean_ms": 1000 * s / n}
                    for name, (n, s) in sorted(nvml.per_function.items(), key=lambda kv: -kv[1][1])}
    return {"cycles": cycles, "first_cycle": first, "cycle_ms": 1000 * total / cycles,
            "nvml_ms": 1000 * nvml.spent / cycles, "ours_ms": 1000 * (total - nvml.spent) / cycles,
            "calls_per_cycle": nvml.calls / cycles, "per_function": per_function,
            "errors": [{"function": f, "error": e, "per_cycle": n / cycles}
                       for (f, e), n in sorted(nvml.errors.items())]}


def facts() -> dict[str, str]:
    import pynvml

    pynvml.nvmlInit()
    try:
        handle = pynvml.nvmlDeviceGetHandleByIndex(0)
        return {"gpu": str(pynvml.nvmlDeviceGetName(handle)), "gpus": str(pynvml.nvmlDeviceGetCount()),
                "driver": str(pynvml.nvmlSystemGetDriverVersion()), "nvml": str(pynvml.nvmlSystemGetNVMLVersion()),
                "pynvml": metadata.version("nvidia-ml-py"), "kernel": platform.release(),
                "cpus": str(os.cpu_count())}
    finally:
        pynvml.nvmlShutdown()


def exporter(args: list[str], log: Path) -> tuple[subprocess.Popen, str]:
    port = free_port()
    with log.open("wb") as out:  # the child keeps its own copy of the descriptor
        process = subprocess.Popen([*VIGIL, *args, "--listen", f"127.0.0.1:{port}", "--interval", "1s"],
                                   stdout=out, stderr=subprocess.STDOUT)
    return process, f"http://127.0.0.1:{port}/metrics"


def scrape_when(url: str, ready, timeout: float, what: str) -> str:
    """The first /metrics text for which `ready(families)` holds, polled every 0.5 s."""
    deadline = time.monotonic() + timeout
    text = ""
    while time.monotonic() < deadline:
        try:
            text = requests.get(url, timeout=5).text
            if ready(families(text)):
                return text
        except requests.RequestException:
            pass
        time.sleep(0.5)
    raise SystemExit(f"timed out after {timeout:.0f} s waiting for {what}; last scrape:\n{text[-2000:]}")


def gpu0(found: dict, name: str) -> float | None:
    for labels, value in found.get(name, []):
        if labels.get("gpu") == "0":
            return value
    return None


def gpu0_samples(found: dict) -> list[tuple[str, float]]:
    """(name{labels other than node, gpu and uuid}, value) of every GPU 0 sample, info labels shown."""
    rows = []
    for name, samples in sorted(found.items()):
        for labels, value in samples:
            if labels.get("gpu") != "0":
                continue
            shown = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()) if k not in HIDDEN_LABELS)
            rows.append((f"{name}{{{shown}}}" if shown else name, value))
    return rows


def summary(info: dict, cost: dict, idle: dict, load: dict | None, sim: dict) -> str:
    lines = [f"Machine: {info['gpu']} x {info['gpus']}, driver {info['driver']}, NVML {info['nvml']}, "
             f"nvidia-ml-py {info['pynvml']}, kernel {info['kernel']}, {info['cpus']} CPUs.", "",
             "| sample (GPU 0) | idle | under load |", "| --- | --- | --- |"]
    under_load = dict(gpu0_samples(load)) if load else {}
    for key, value in gpu0_samples(idle):
        lines.append(f"| `{key}` | {value:g} | {under_load[key]:g} |" if key in under_load else f"| `{key}` | {value:g} | — |")
    lines += ["", f"Collection cycle (in-process, {cost['cycles']} cycles): {cost['cycle_ms']:.2f} ms, of which "
              f"{cost['nvml_ms']:.2f} ms inside NVML ({cost['calls_per_cycle']:.0f} calls) and {cost['ours_ms']:.2f} ms "
              f"our code; first cycle {cost['first_cycle']['ms']:.1f} ms ({cost['first_cycle']['calls']} calls).", "",
              "| NVML function | calls a cycle | mean ms |", "| --- | --- | --- |"]
    for name, entry in cost["per_function"].items():
        lines.append(f"| `{name}` | {entry['calls_per_cycle']:.1f} | {entry['mean_ms']:.3f} |")
    lines += ["", "| NVML error | function | a cycle |", "| --- | --- | --- |"]
    lines += [f"| {e['error']} | `{e['function']}` | {e['per_cycle']:.1f} |" for e in cost["errors"]] or ["| none | | |"]
    real = set(idle) | set(load or {})
    lines += ["", f"Sample names: {len(real)} from the real GPU, {len(sim)} from the simulator.", "",
              "Only in the simulator: " + (", ".join(f"`{n}`" for n in sorted(set(sim) - real)) or "none"), "",
              "Only on the real GPU: " + (", ".join(f"`{n}`" for n in sorted(real - set(sim))) or "none")]
    return "\n".join(lines) + "\n"


def stop(process: subprocess.Popen) -> None:
    process.terminate()
    try:
        process.wait(10)
    except subprocess.TimeoutExpired:
        process.kill()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="folder for the captures and summary.md")
    parser.add_argument("--cycles", type=int, default=100, help="in-process collection cycles timed")
    parser.add_argument("--load-seconds", type=float, default=60.0, help="how long the load runs at most")
    args = parser.parse_args()
    try:
        info = facts()
    except Exception as error:  # no driver: pynvml raises NVMLError_LibraryNotFound and the like
        print(f"no usable NVIDIA driver here ({error}); this benchmark needs a real GPU", file=sys.stderr)
        raise SystemExit(2) from None
    args.out.mkdir(parents=True, exist_ok=True)
    print(json.dumps(info), flush=True)
    cost = nvml_cost(args.cycles)
    (args.out / "nvml.json").write_text(json.dumps({"facts": info, "cost": cost}, indent=1))

    real, url = exporter(["--backend", "nvml"], args.out / "exporter.log")
    sim_proc, sim_url = exporter(["--backend", "sim", "--sim-nodes", "1", "--sim-gpus", info["gpus"]],
                                 args.out / "sim.log")
    load_text = None
    try:
        idle_text = scrape_when(url, lambda f: "vigil_gpu_up" in f, 60, "the real exporter's first cycle")
        (args.out / "idle.prom").write_text(idle_text)
        sim_text = scrape_when(sim_url, lambda f: "vigil_gpu_up" in f, 60, "the simulator's first cycle")
        (args.out / "sim.prom").write_text(sim_text)
        # the load runs in a child process, only where the machine has PyTorch (not a vigil dependency)
        if importlib.util.find_spec("torch") is None:
            print("PyTorch is not installed: no capture under load", file=sys.stderr)
        else:
            load = subprocess.Popen([sys.executable, "-c", LOAD, str(args.load_seconds)])
            try:
                # busy, and job attribution's map rebuilt since the load began (it is rebuilt every 30 s)
                load_text = scrape_when(url, lambda f: (gpu0(f, "vigil_gpu_utilization_ratio") or 0) >= 0.9
                                        and (gpu0(f, "vigil_gpu_power_watts") or 0) > 200
                                        and sum(v for labels, v in f.get("vigil_gpu_processes", [])
                                                if labels.get("gpu") == "0") >= 1,
                                        args.load_seconds, "GPU 0 busy (utilization >= 90 %, power > 200 W) "
                                        "and its process attributed")
                (args.out / "load.prom").write_text(load_text)
            finally:
                stop(load)
    finally:
        stop(real)
        stop(sim_proc)
    text = summary(info, cost, families(idle_text), families(load_text) if load_text else None, families(sim_text))
    (args.out / "summary.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
