"""The processes the rule benchmark measures: the simulated fleet (`vigil exporter gpu --backend sim
--single-port`) and the real Prometheus scraping it with the generated rules, on free loopback ports."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import requests
import yaml

from vigil.common.ports import free_port

ROOT = Path(__file__).resolve().parents[2]
PROMETHEUS = "/usr/bin/prometheus"
VIGIL = [sys.executable, "-m", "vigil.cli"]
CLK_TCK = os.sysconf("SC_CLK_TCK")


def proc_figures(pid: int) -> dict[str, float]:
    """CPU seconds (user + system), resident MiB and thread count of a process, from /proc."""
    stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    status = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line)
    return {"cpu_s": (int(stat[11]) + int(stat[12])) / CLK_TCK,
            "rss_mib": int(status["VmRSS"].split()[0]) / 1024, "threads": int(status["Threads"])}


def started_at(pid: int) -> float:
    """The Unix time a process started (from /proc: the kernel's tick resolution, 10 ms)."""
    btime = next(int(line.split()[1]) for line in Path("/proc/stat").read_text().splitlines()
                 if line.startswith("btime "))
    ticks = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19])
    return btime + ticks / CLK_TCK


_GCTRACE = re.compile(r"^gc \d+ @(?P<at>[\d.]+)s \d+%: (?P<clock>[\d.+]+) ms clock")


def gc_cycles(log: str, start: float) -> list[tuple[float, float]]:
    """(begin, end) Unix times of every Go GC cycle in a `GODEBUG=gctrace=1` log of a process started
    at `start`: from the cycle's start to the end of its mark termination (the wall-clock phases of the
    trace line: sweep termination + concurrent mark + mark termination)."""
    cycles = []
    for line in log.splitlines():
        found = _GCTRACE.match(line)
        if found:
            begin = start + float(found["at"])
            cycles.append((begin, begin + sum(float(ms) for ms in found["clock"].split("+")) / 1000))
    return cycles


def generate_rules(out: Path) -> Path:
    """The whole shipped catalog, as `vigil rules generate` writes it; returns the rule file."""
    subprocess.run([*VIGIL, "rules", "generate", "-o", str(out)], check=True, cwd=ROOT, stdout=subprocess.DEVNULL)
    return out / "vigil-rules.yml"


def prometheus_config(fleet_port: int, nodes: int, rules: Path, prom_port: int, interval_s: int) -> dict:
    """Scrape every simulated node as its own target (`/metrics?node=node-i` on the fleet's one port)."""
    targets = [{"targets": [f"127.0.0.1:{fleet_port}"],
                "labels": {"__param_node": f"node-{i}", "instance": f"node-{i}", "node": f"node-{i}"}}
               for i in range(1, nodes + 1)]
    return {
        "global": {"scrape_interval": f"{interval_s}s", "scrape_timeout": f"{int(interval_s * 0.8)}s",
                   "evaluation_interval": f"{interval_s}s"},
        "rule_files": [str(rules)],
        "scrape_configs": [
            {"job_name": "prometheus", "static_configs": [{"targets": [f"127.0.0.1:{prom_port}"]}]},
            {"job_name": "vigil-gpu", "honor_labels": True, "static_configs": targets},
        ],
    }


def wait_until(check, timeout: float, what: str, step: float = 0.5, process: subprocess.Popen | None = None):
    """Poll `check()` until it returns something truthy; exit with `what` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise SystemExit(f"{process.args[0]} exited with {process.returncode} while waiting for {what}")
        try:
            result = check()
            if result:
                return result
        except requests.RequestException:
            pass
        time.sleep(step)
    raise SystemExit(f"timed out after {timeout:.0f} s waiting for {what}")


def _stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@contextmanager
def fleet(nodes: int, gpus: int, refresh_s: int, logs: Path,
          control: int | None = None) -> Iterator[tuple[subprocess.Popen, int]]:
    """The simulated fleet in one process, ready when its last node answers; (process, port). `control`:
    the port of its chaos API (default: a free one)."""
    port, control = free_port(), control or free_port()
    log = (logs / f"fleet-{nodes}.log").open("wb")
    process = subprocess.Popen([*VIGIL, "exporter", "gpu", "--backend", "sim", "--sim-nodes", str(nodes),
                                "--sim-gpus", str(gpus), "--single-port", "--listen", f"127.0.0.1:{port}",
                                "--control-listen", f"127.0.0.1:{control}", "--interval", f"{refresh_s}s"],
                               cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
    try:
        last = f"http://127.0.0.1:{port}/metrics?node=node-{nodes}"
        wait_until(lambda: requests.get(last, timeout=10).ok, 300, f"the {nodes}-node fleet", process=process)
        yield process, port
    finally:
        _stop(process)
        log.close()


@contextmanager
def prometheus(config: dict, workdir: Path) -> Iterator[tuple[subprocess.Popen, str]]:
    """The real Prometheus with `config`, ready; (process, base URL). Its log (`prometheus.log` in
    `workdir`) has a line per Go GC cycle (`gc_cycles`)."""
    port = config["scrape_configs"][0]["static_configs"][0]["targets"][0].rsplit(":", 1)[1]
    (workdir / "prometheus.yml").write_text(yaml.safe_dump(config, sort_keys=False))
    log = (workdir / "prometheus.log").open("wb")
    # gctrace: a line per Go GC cycle in the log (gc_cycles), to tell rule time from GC time
    process = subprocess.Popen([PROMETHEUS, f"--config.file={workdir / 'prometheus.yml'}",
                                f"--storage.tsdb.path={workdir / 'data'}", f"--web.listen-address=127.0.0.1:{port}"],
                               stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "GODEBUG": "gctrace=1"})
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until(lambda: requests.get(f"{url}/-/ready", timeout=5).ok, 120, "Prometheus", process=process)
        yield process, url
    finally:
        _stop(process)
        log.close()
