"""VictoriaMetrics (the shards' remote-write target) and vmalert (the global rules over it), started on
free loopback ports for the scaling bench, with the figures read from them."""

from __future__ import annotations

import subprocess
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import requests

from reuse import rules_run, stack
from vigil.rules.dump import dump_yaml
from vigil.stack.config.vmalert import vmalert_argv

VICTORIA_METRICS = "/usr/bin/victoria-metrics"
VMALERT = "/usr/bin/vmalert"


@contextmanager
def started(argv: list[str], log_path: Path, health: str, what: str) -> Iterator[subprocess.Popen]:
    """`argv` running, its output in `log_path`, once `health` answers 2xx; stopped on leaving."""
    log = log_path.open("wb")
    process = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)
    try:
        stack.wait_until(lambda: requests.get(health, timeout=5).ok, 60, what, process=process)
        yield process
    finally:
        stack._stop(process)
        log.close()


@contextmanager
def victoria_metrics(workdir: Path, scrape_s: int) -> Iterator[tuple[subprocess.Popen, str]]:
    """One VictoriaMetrics with the flags of the ha profile that matter for size; (process, base URL)."""
    url = f"http://127.0.0.1:{stack.free_port()}"
    argv = [VICTORIA_METRICS, f"-storageDataPath={workdir / 'vm-data'}", f"-httpListenAddr={url[7:]}",
            "-retentionPeriod=30d", f"-dedup.minScrapeInterval={scrape_s}s", f"-search.latencyOffset={2 * scrape_s}s"]
    with started(argv, workdir / "victoria-metrics.log", f"{url}/health", "VictoriaMetrics") as process:
        yield process, url


@contextmanager
def vmalert(rules: dict, vm_url: str, workdir: Path, scrape_s: int) -> Iterator[tuple[subprocess.Popen, str]]:
    """vmalert evaluating `rules` over VictoriaMetrics, writing recorded series back to it; alerts go to a
    port nobody listens on (their delivery is not what is measured)."""
    (workdir / "global-rules.yml").write_text(dump_yaml(rules))
    url = f"http://127.0.0.1:{stack.free_port()}"
    argv = vmalert_argv(VMALERT, workdir / "global-rules.yml", vm_url, f"http://127.0.0.1:{stack.free_port()}",
                        url[7:], scrape_s)
    with started(argv, workdir / "vmalert.log", f"{url}/health", "vmalert") as process:
        yield process, url


def vm_figures(url: str, data: Path) -> dict[str, float]:
    """Rows stored, bytes of the samples' parts and of everything (index included: it grows with new
    series, not with time), the data directory's bytes, rows received; after a forced flush."""
    requests.get(f"{url}/internal/force_flush", timeout=60)
    m = rules_run.prom_metrics(url)  # a /metrics page: {name: {sorted label items: value}}
    def storage(name: str) -> float:  # the samples' parts; `indexdb/*` is the series index
        return sum(v for k, v in m.get(name, {}).items() if dict(k).get("type", "").startswith("storage/"))
    return {"rows": storage("vm_rows"), "storage_bytes": storage("vm_data_size_bytes"),
            "size_bytes": sum(m.get("vm_data_size_bytes", {}).values()),
            "inserted": sum(m.get("vm_rows_inserted_total", {}).values()),
            "dir_bytes": sum(p.stat().st_size for p in data.rglob("*") if p.is_file())}


def vmalert_groups(url: str) -> dict[str, float]:
    """Largest iteration time seen per group (ms), from vmalert's `vmalert_iteration_duration_seconds`."""
    found: dict[str, float] = {}
    for labels, value in rules_run.prom_metrics(url).get("vmalert_iteration_duration_seconds", {}).items():
        group = dict(labels).get("group")
        if group and value == value:  # NaN while a quantile has no observation
            found[group] = max(found.get(group, 0.0), 1000 * value)
    return found
