"""Benchmark: peak memory of `vigil aiops train` reading Prometheus, against the same training from a file.

One command: `.venv/bin/python bench/aiops/train_memory.py` (options: --series 72,712,2000,5000, --days,
--timeout, --record). For each size N it builds N GPU-like series (the demo's labels: node, gpu, uuid,
job, instance; a daily cycle, a weekend dip and noise) of 14 days at a 5-minute step and
- backfills them into a fresh Prometheus TSDB the way `vigil up` does (`vigil.stack.history.backfill_series`:
  OpenMetrics text, then `promtool tsdb create-blocks-from openmetrics`), serves it with a query-only
  Prometheus on a free loopback port (`vigil.stack.tsdb_readback.prometheus_on`, the stack's launcher),
  and runs `vigil aiops train --prometheus URL --match vigil_gpu_utilization_ratio` against it;
- writes the same series to a wide Parquet file (one column per series) and runs
  `vigil aiops train --input FILE`, the reference;
- starts the service as a deployment runs it (`vigil aiops serve --prometheus-url URL --match …`, a fresh
  model directory, so it trains at start), waits for its `/healthz` to answer 200 (trained), asks it one
  question (`POST /api/v1/ask`: the Text2PromQL catalog loads on the first), scrapes its `/metrics` 20 times, and reads its resident memory (`VmRSS`) and high-water mark (`VmHWM`) from
  `/proc/PID/status`: what a Kubernetes memory limit must hold (`deploy/k8s/aiops_memory.py` derives the
  overlays' AIOps limits from this column).
Each `train` is a child process; its peak RSS is the kernel's high-water mark for that child alone
(`os.wait4`'s rusage), so neither this process nor promtool nor Prometheus counts. `--record` writes
the table into section `aiops-train-memory` of docs/benchmarks.md.

Scratch space (under TMPDIR, checked first): the OpenMetrics file promtool reads, about 150 bytes per
sample, some 3 GiB at 5,000 series; it is deleted once the blocks are written. Building the inputs took
63 s for 712 series on 2 shared cores, so count several minutes at 5,000; this process then holds the
values (8 bytes per sample, 160 MB at 5,000).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import requests

from vigil.aiops.baseline.store import load_store
from vigil.aiops.benchmark_record import add_record_option, machine_summary, utc_now, write_section
from vigil.exporters.sim.identity import device_uuid
from vigil.common.ports import free_port
from vigil.stack.components import SYSTEM_BINARIES, vigil_argv
from vigil.stack.config import RunLayout
from vigil.stack.history import BACKFILLED_METRIC, STEP_S, backfill_series, history_end
from vigil.stack.settings import StackSettings
from vigil.stack.tsdb_readback import prometheus_on

SECTION = "aiops-train-memory"
DOC = Path(__file__).resolve().parents[2] / "docs" / "benchmarks.md"
GPUS_PER_NODE = 8
OPENMETRICS_BYTES_PER_SAMPLE = 170  # a line of the backfill file with the demo's labels, with room to spare
DAY_S = 86_400.0
QUESTION = "average GPU utilization per node"


@dataclass(frozen=True)
class Run:
    seconds: float
    peak_mib: float
    baselines: int


@dataclass(frozen=True)
class Served:
    seconds_to_ready: float
    peak_mib: float  # VmHWM: the service's high-water mark, its start-up training included
    serving_mib: float  # VmRSS after the /metrics scrapes


def fleet_labels(n: int) -> list[dict[str, str]]:
    """The labels of n GPU series as the demo's scrape gives them, 8 GPUs a node."""
    out = []
    for i in range(n):
        node, gpu = f"node-{i // GPUS_PER_NODE + 1}", i % GPUS_PER_NODE
        out.append({"node": node, "gpu": str(gpu), "uuid": device_uuid(node, gpu), "job": "gpu",
                    "instance": f"{node}:9400"})
    return out


def gpu_like(i: int, t: np.ndarray) -> np.ndarray:
    """Utilization of GPU i: its own level and phase, a daily cycle, a weekend dip, bounded noise."""
    rng = np.random.default_rng(i)
    level, phase = 0.55 + 0.2 * rng.random(), 0.9 * rng.random()
    daily = 0.3 * np.sin(2 * np.pi * (t % DAY_S) / DAY_S - np.pi / 2 + phase)
    weekend = np.where((t // DAY_S + 3) % 7 >= 5, -0.15, 0.0)
    noise = 0.08 * (rng.random(t.size) - 0.5)
    return np.round(np.clip(level + daily + weekend + noise, 0.0, 1.0), 4)


def selector_text(labels: dict[str, str]) -> str:
    return BACKFILLED_METRIC + "{" + ",".join(f'{k}="{v}"' for k, v in sorted(labels.items())) + "}"


def build_inputs(n: int, days: float, work: Path, promtool: str) -> tuple[Path, Path, int]:
    """(TSDB directory, Parquet file, points per series) for n series ending a step before now."""
    import pyarrow
    import pyarrow.parquet

    end = history_end()
    t = end - STEP_S * np.arange(int(days * DAY_S / STEP_S))[::-1]
    labels = fleet_labels(n)
    values = [gpu_like(i, t) for i in range(n)]
    table = pyarrow.table({"timestamp": t, **{selector_text(lab): v for lab, v in zip(labels, values)}})
    parquet = work / "history.parquet"
    pyarrow.parquet.write_table(table, parquet)
    del table
    tsdb = work / "tsdb"
    tsdb.mkdir()
    timestamps = t.tolist()
    settings = StackSettings(backfill_days=days)
    said = backfill_series(settings, RunLayout(work), {"promtool": promtool}, tsdb, end,
                           lambda: [(BACKFILLED_METRIC, lab, timestamps, v) for lab, v in zip(labels, values)])
    if not (tsdb / "vigil-backfill.json").exists():
        raise SystemExit(said)
    return tsdb, parquet, t.size


def run_train(args: list[str], work: Path, name: str, timeout_s: float) -> Run:
    """Run `vigil aiops train ARGS --model-dir …` as a child; its wall time, peak RSS and baselines."""
    model_dir = work / f"models-{name}"
    log = work / f"train-{name}.log"
    started = time.monotonic()
    with open(log, "wb") as out:
        proc = subprocess.Popen(vigil_argv("aiops", "train", *args, "--model-dir", str(model_dir)),
                                stdout=out, stderr=subprocess.STDOUT)
    timer = threading.Timer(timeout_s, proc.kill)
    timer.start()
    try:
        _, status, usage = os.wait4(proc.pid, 0)  # this child's own rusage: ru_maxrss in KiB on Linux
    finally:
        timer.cancel()
    seconds = time.monotonic() - started
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        tail = log.read_text(errors="replace")[-2000:]
        raise SystemExit(f"{name} training failed (exit {proc.returncode}, timeout {timeout_s:.0f} s):\n{tail}")
    return Run(seconds, usage.ru_maxrss / 1024, len(load_store(model_dir)["series"]))


def proc_status_mib(pid: int) -> dict[str, float]:
    """VmRSS and VmHWM of process `pid` in MiB (Linux /proc)."""
    found = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            found[key] = int(value.split()[0]) / 1024
    return found


def run_service(prometheus_url: str, work: Path, timeout_s: float, scrapes: int = 20) -> Served:
    """`vigil aiops serve` training at start from `prometheus_url`: time to ready and its memory."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log = work / "serve.log"
    started = time.monotonic()
    with open(log, "wb") as out:
        proc = subprocess.Popen(vigil_argv("aiops", "serve", "--listen", f"127.0.0.1:{port}", "--model-dir",
                                           str(work / "models-serve"), "--prometheus-url", prometheus_url,
                                           "--match", BACKFILLED_METRIC), stdout=out, stderr=subprocess.STDOUT)
    try:
        while True:  # wait on the condition: trained (200), still training (503), not listening yet
            if proc.poll() is not None:
                raise SystemExit(f"aiops serve exited {proc.returncode}:\n{log.read_text(errors='replace')[-2000:]}")
            if time.monotonic() - started > timeout_s:
                raise SystemExit(f"aiops serve not ready after {timeout_s:.0f} s")
            try:
                if requests.get(url + "/healthz", timeout=5).status_code == 200:
                    break
            except requests.RequestException:
                pass
            time.sleep(0.5)
        ready = time.monotonic() - started
        # one question: the Text2PromQL catalog loads on the first one and stays (about 45 MiB)
        requests.post(url + "/api/v1/ask", json={"question": QUESTION}, timeout=60)
        for _ in range(scrapes):
            requests.get(url + "/metrics", timeout=30).raise_for_status()
        memory = proc_status_mib(proc.pid)
        return Served(ready, memory["VmHWM"], memory["VmRSS"])
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def check_disk(work: Path, n: int, points: int) -> None:
    need = n * points * OPENMETRICS_BYTES_PER_SAMPLE
    free = shutil.disk_usage(work).free
    if free < need:
        raise SystemExit(f"{n} series need about {need / 2**30:.1f} GiB of scratch space in {work}; "
                         f"{free / 2**30:.1f} GiB free (set TMPDIR elsewhere)")


def measure(n: int, days: float, timeout_s: float, promtool: str) -> tuple[int, Run, Run, Served]:
    with tempfile.TemporaryDirectory(prefix="vigil-train-memory-") as scratch:
        work = Path(scratch)
        check_disk(work, n, int(days * DAY_S / STEP_S))
        started = time.monotonic()
        tsdb, parquet, points = build_inputs(n, days, work, promtool)
        print(f"{n} series: TSDB and Parquet file built in {time.monotonic() - started:.0f} s", file=sys.stderr, flush=True)
        lookback = f"{days * DAY_S:.0f}s"
        with prometheus_on(tsdb, work, ready_timeout_s=300) as prometheus:
            from_prometheus = run_train(["--prometheus", prometheus.url, "--match", BACKFILLED_METRIC,
                                         "--lookback", lookback], work, "prometheus", timeout_s)
            served = run_service(prometheus.url, work, timeout_s)
        from_file = run_train(["--input", str(parquet)], work, "file", timeout_s)
    return points, from_prometheus, from_file, served


def table(rows: list[tuple[int, int, Run, Run, Served]]) -> str:
    lines = ["| series | points | Prometheus: seconds | Prometheus: peak RSS MiB | file: seconds | file: peak RSS MiB "
             "| service: ready s | service: peak RSS MiB | service: RSS serving MiB |",
             "|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for n, points, prom, file, served in rows:
        lines.append(f"| {n:,} | {n * points:,} | {prom.seconds:.1f} | {prom.peak_mib:.0f} | "
                     f"{file.seconds:.1f} | {file.peak_mib:.0f} | {served.seconds_to_ready:.1f} | "
                     f"{served.peak_mib:.0f} | {served.serving_mib:.0f} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--series", default="72,712,2000,5000", help="comma-separated fleet sizes (GPU series)")
    parser.add_argument("--days", type=float, default=14.0, help="history per series (at most 30)")
    parser.add_argument("--timeout", type=float, default=3600.0, help="seconds one training may take")
    add_record_option(parser)
    args = parser.parse_args()
    sizes = [int(s) for s in args.series.split(",") if s.strip()]
    promtool = shutil.which(SYSTEM_BINARIES["promtool"][0])
    if promtool is None:
        raise SystemExit("promtool is not installed (Debian package prometheus)")
    rows = []
    for n in sizes:
        points, prom, file, served = measure(n, args.days, args.timeout, promtool)
        if prom.baselines != file.baselines:
            raise SystemExit(f"{n} series: {prom.baselines} baselines from Prometheus but {file.baselines} from the file")
        rows.append((n, points, prom, file, served))
        print(f"{n} series: Prometheus {prom.seconds:.1f} s {prom.peak_mib:.0f} MiB; "
              f"file {file.seconds:.1f} s {file.peak_mib:.0f} MiB; service ready in {served.seconds_to_ready:.1f} s, "
              f"peak {served.peak_mib:.0f} MiB, serving {served.serving_mib:.0f} MiB", file=sys.stderr, flush=True)
    text = f"""## AIOps: training memory (`vigil aiops train`, Prometheus against a file)

Machine: {machine_summary()}. Date: {utc_now()}. Command: `.venv/bin/python bench/aiops/train_memory.py
--series {",".join(map(str, sizes))}{f" --days {args.days:g}" if args.days != 14 else ""}`.

GPU-like series (the demo's labels, 8 GPUs a node) of {args.days:g} days at 5 minutes, backfilled with
promtool into a real Prometheus and trained with `vigil aiops train --prometheus URL --match
{BACKFILLED_METRIC}`; the reference trains on the same series from a wide Parquet file (`--input`).
Peak RSS is each `train` process's own high-water mark (kernel rusage at exit); seconds are its wall time.
The service (`vigil aiops serve --prometheus-url URL --match {BACKFILLED_METRIC}`, trained at start): seconds
until `/healthz` answers 200, its high-water mark and its resident memory after one question to
`POST /api/v1/ask` (its catalog loads on the first) and 20 `/metrics` scrapes
(`/proc/PID/status`); `deploy/k8s/aiops_memory.py` derives the overlays' AIOps memory from the service's peak.

{table(rows)}
"""
    print(text)
    if args.record:
        write_section(DOC, SECTION, text)


if __name__ == "__main__":
    main()
