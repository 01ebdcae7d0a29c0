"""Backfill simulated GPU history into Prometheus so baselines exist from the first minute of a demo.

The simulated load is a pure function of time (`exporters.sim.load.gpu_load`, and on the nodes with
simulated jobs `exporters.sim.jobs.JobSchedule.load`, which follows the jobs), so weeks of history can
be written before Prometheus starts. The backfilled series carry exactly the labels the live scrape
gives them (`node`, `gpu`, `uuid` from the exporter; `job`, `instance` from the target), so history and
live samples are one series and the AIOps service trains on it at start.
"""

from __future__ import annotations

import json
import math
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from vigil.aiops.history.openmetrics import write_openmetrics
from vigil.common.hostport import format_host_port
from vigil.exporters.sim.jobs import JobSchedule
from vigil.exporters.sim.nvml import device_uuid

from vigil.stack.settings import StackSettings
from vigil.stack.config import GPU_JOB, RunLayout

STEP_S = 300.0
BACKFILLED_METRIC = "vigil_gpu_utilization_ratio"


def simulated_series(settings: StackSettings, node_names: list[str], end: float) -> list[tuple]:
    count = int(settings.backfill_days * 86_400 / STEP_S)
    timestamps = [end - STEP_S * i for i in range(count, 0, -1)]
    series = []
    load = JobSchedule(node_names, settings.sim_gpus, settings.sim_jobs,
                       hang_rate=settings.sim_job_hangs).load  # as the fleet's jobs ran
    for index, node in enumerate(node_names, start=1):
        instance = format_host_port(settings.host, settings.ports.gpu_node(index))  # as the scrape target names it
        for gpu in range(settings.sim_gpus):
            labels = {"node": node, "gpu": str(gpu), "uuid": device_uuid(node, gpu), "job": GPU_JOB, "instance": instance}
            series.append((BACKFILLED_METRIC, labels, timestamps, [load(node, gpu, t) for t in timestamps]))
    return series


def history_end() -> float:
    """Where the backfilled history ends: a few minutes back, so the live head block starts after it."""
    return math.floor(time.time() / STEP_S) * STEP_S - STEP_S


def backfill_simulated_history(settings: StackSettings, layout: RunLayout, binaries: dict[str, str],
                               node_names: list[str]) -> str:
    """Write `backfill_days` of simulated history into the TSDB once per run directory; say what happened."""
    end = history_end()
    return backfill_series(settings, layout, binaries, layout.prometheus_data, end,
                           lambda: simulated_series(settings, node_names, end))


def backfill_series(settings: StackSettings, layout: RunLayout, binaries: dict[str, str], data_dir: Path, end: float,
                    series: Callable[[], list[tuple]]) -> str:
    """Write `series()` (history ending at `end`) into the TSDB at `data_dir` once (a marker file there says
    it is done); `series` is called only when the TSDB still needs it."""
    if settings.backfill_days <= 0:
        return "history backfill: off (backfill_days is 0)"
    marker = data_dir / "vigil-backfill.json"
    if marker.exists():
        return f"history backfill: already done ({json.loads(marker.read_text())['samples']} samples)"
    started = time.monotonic()
    source = layout.root / "backfill.om"
    samples = write_openmetrics(source, series(),
                                helps={BACKFILLED_METRIC: "Simulated GPU utilization history (backfilled by vigil up)"})
    result = subprocess.run([binaries["promtool"], "tsdb", "create-blocks-from", "openmetrics", "--max-block-duration=24h",
                             str(source), str(data_dir)], capture_output=True, text=True)
    source.unlink(missing_ok=True)
    if result.returncode != 0:
        return f"history backfill failed (baselines will learn from live data only): {result.stderr.strip()[-500:]}"
    marker.write_text(json.dumps({"samples": samples, "days": settings.backfill_days, "end": end}) + "\n")
    return f"history backfill: {samples} samples ({settings.backfill_days:g} days) in {time.monotonic() - started:.1f}s"
