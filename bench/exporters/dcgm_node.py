"""Scrape cost of the DCGM collector, node health exporter and job attribution versus doing the work per scrape.

    .venv/bin/python bench/exporters/dcgm_node.py [--scrapes N]

All three serve a background snapshot. Peers measured in the same run are what a scrape would cost
without the snapshot:
- DCGM: fetching and parsing the (simulated, 8-GPU, served over loopback HTTP) dcgm-exporter page
  directly. When a refresh is due our scrape does that work too (plus rendering), so the ratio is
  about 1 there; it pays off for scrapes within `max_age` and for an exporter slower than `timeout`;
- job attribution: a full, uncached attribution cycle over 64 GPU processes in a fake /proc;
- node health: one real `smartctl --scan-open --json` run (the first step of every SMART pass).
Figures (median of N) go to section `exporters-dcgm-node` of docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

import requests  # noqa: E402
from prometheus_client import CollectorRegistry, generate_latest  # noqa: E402

from vigil.aiops.benchmark_record import add_record_option, machine_summary, utc_now, write_section  # noqa: E402
from vigil.exporters.dcgm import DcgmCollector, parse_page  # noqa: E402
from vigil.exporters.job_sources.cgroup import CgroupContainerSource  # noqa: E402
from vigil.exporters.job_sources.slurm import SlurmSource  # noqa: E402
from vigil.exporters.jobs import JobAttributionCollector, attribute  # noqa: E402
from vigil.exporters.node_health import NodeHealthCollector  # noqa: E402
from vigil.exporters.sim.dcgm_page import PageServer, render_page  # noqa: E402
from vigil.exporters.sim.smart import SimulatedSmartctl  # noqa: E402
from vigil.exporters.smart import SmartReader  # noqa: E402
from vigil.exporters.spec import GpuProcess  # noqa: E402


def median_ms(fn, n: int) -> float:
    times = []
    for _ in range(n):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return 1000 * statistics.median(times)


def scraper(collector):
    registry = CollectorRegistry()
    registry.register(collector)
    return lambda: generate_latest(registry)


def fake_proc(root: Path, count: int) -> list[GpuProcess]:
    processes = []
    for pid in range(1000, 1000 + count):
        d = root / "proc" / str(pid)
        d.mkdir(parents=True)
        env = f"PATH=/usr/bin\0SLURM_JOB_ID={pid // 8}\0SLURM_JOB_USER=u{pid % 5}\0SLURM_JOB_ACCOUNT=a\0"
        (d / "environ").write_bytes(env.encode())
        (d / "cgroup").write_text(f"0::/system.slice/slurmstepd.scope/job_{pid // 8}/step_0\n")
        (root / "cgroup" / "system.slice" / "slurmstepd.scope" / f"job_{pid // 8}").mkdir(parents=True, exist_ok=True)
        processes.append(GpuProcess("bench", pid % 8, f"GPU-{pid % 8}", pid))
    return processes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scrapes", type=int, default=50)
    add_record_option(parser)
    args = parser.parse_args()
    n = args.scrapes
    load_at_start = os.getloadavg()[0]
    rows = []

    fast = PageServer(lambda: render_page("bench", scheme="4.9", gpus=8))
    hung = PageServer(lambda: render_page("bench", scheme="4.9", gpus=8), delay_s=5.0)
    try:
        def direct(server):
            return lambda: parse_page(requests.get(server.url, timeout=10).text)

        due = scraper(DcgmCollector(fast.url, timeout=2.0, max_age=0.0))  # every scrape finds a refresh due
        rows.append(("DCGM, 8 GPUs, refresh due (scrape interval > max_age)", "fetch + parse the page per scrape",
                     median_ms(due, n), median_ms(direct(fast), n)))
        cached = scraper(DcgmCollector(fast.url, timeout=2.0, max_age=3600))
        cached()
        rows.append(("DCGM, 8 GPUs, page younger than max_age (e.g. 2nd Prometheus of an HA pair)",
                     "fetch + parse the page per scrape", median_ms(cached, n), median_ms(direct(fast), n)))
        bounded = scraper(DcgmCollector(hung.url, timeout=2.0, max_age=0.0))
        rows.append(("DCGM, dcgm-exporter answering in 5 s, timeout 2 s", "fetch + parse the page per scrape",
                     median_ms(bounded, 3), median_ms(direct(hung), 3)))
    finally:
        fast.close()
        hung.close()

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        processes = fake_proc(root, 64)

        def sources():
            return [SlurmSource(root / "proc", root / "cgroup"), CgroupContainerSource(root / "proc")]

        scrape = scraper(JobAttributionCollector(lambda: processes, sources(), node="bench", refresh_interval=3600))
        scrape()
        ours = median_ms(scrape, n)
        peer = median_ms(lambda: attribute(processes, sources()), n)
        rows.append(("job attribution, 64 processes / 8 GPUs", "uncached attribution cycle per scrape", ours, peer))

    smartctl = shutil.which("smartctl")
    if smartctl:
        collector = NodeHealthCollector("bench", SmartReader(SimulatedSmartctl("bench", 8)), sysfs_root="/nonexistent")
        scrape = scraper(collector)
        scrape()
        ours = median_ms(scrape, n)
        peer = median_ms(lambda: subprocess.run([smartctl, "--scan-open", "--json"], capture_output=True), 5)
        rows.append(("node health, 8 disks (simulated smartctl)", "one real `smartctl --scan-open --json`", ours, peer))

    lines = [
        "## Exporters: DCGM collector, node health, job attribution",
        "",
        f"Machine: {machine_summary()}. Date: {utc_now()}. Command: `.venv/bin/python bench/exporters/dcgm_node.py`"
        f" (median of {n} scrapes; peers median of 3-{n} runs). Load average at start: {load_at_start:.2f}"
        " (the cores are shared, so single figures move by tens of percent between runs).",
        "",
        "| workload | peer (what a scrape would do without the snapshot) | vigil scrape ms | peer ms | peer / vigil |",
        "|---|---|---:|---:|---:|",
    ]
    for workload, peer_name, ours, peer in rows:
        lines.append(f"| {workload} | {peer_name} | {ours:.3f} | {peer:.3f} | {peer / ours:.1f}x |")
    lines += ["", "When a DCGM refresh is due, a scrape costs about what reading the page directly costs (it waits for"
              " the read, up to `timeout`); the snapshot pays off for scrapes within `max_age` and caps the cost of a"
              " slow exporter at `timeout`. Job attribution and SMART scrapes never run their sources."]
    print("\n".join(lines))
    if args.record:
        write_section(REPO / "docs" / "benchmarks.md", "exporters-dcgm-node", "\n".join(lines))


if __name__ == "__main__":
    main()
