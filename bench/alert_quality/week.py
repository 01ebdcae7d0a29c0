"""Alert quality over a simulated week: which pages the shipped rules would send, and how many belong to a fault.

    .venv/bin/python bench/alert_quality/week.py [--nodes 64] [--gpus 2] [--days 7] [--step 180]
        [--scale 80] [--seed 1] [--workers 2] [--record]

1. **Faults from published rates.** Llama 3's run (16,384 H100s, 54 days) had 419 unexpected
   interruptions, 0.47 per 1,000 GPU-days (`../shared/docs/field-notes.md`). Each GPU draws its faults
   from a Poisson process at that rate times `--scale` (a small fleet's week holds about one at scale
   1; the issue asks for dozens). Each fault is one of the simulator's, weighted by the report's causes
   where the simulator has an equivalent:
   - faulty GPU 30.1 % → `xid79`
   - HBM3 memory 17.2 % → `ecc-dbe`
   - other GPU memory (SRAM 4.5 %) → `row-remap-failure`
   - host 7.6 % → `node-down`
   - thermal 1.4 % → `overheat`
   - NVLink (of the network share, 1.7 %) → `nvlink-errors`

   Network and software causes leave no GPU-metric signature in the simulator and are left out. A fault
   lasts 1 to 4 hours (uniform), then it is cleared as a repair would; two faults never overlap on one
   node.
2. **The week's metrics.** They come from the simulator itself: `SimulatedNvml` and the exporter's
   `NvmlCollector`, one refresh a node every `--step` seconds. Only the families the shipped rules read
   are kept. Each node also has a node_exporter target, down with the node. The stack's own services
   (Prometheus, Alertmanager, notifier, AIOps, node health) are one healthy target each, all week: the
   bench judges the GPU rules, not the control plane's. The Watchdog (always firing, never a page) is
   left out. Nodes are spread over `--workers` processes, one OpenMetrics file each, turned into blocks by
   promtool and served by the Debian Prometheus (queries only).
3. **The rules.** `vigil rules backtest`'s engine evaluates every shipped alert over the week.
4. **Classification.**
   - A firing **belongs to a fault** when it starts between the fault's start and 30 minutes after it
     was cleared, on its node (and GPU, when both name one). An alert about no node counts for any
     fault then.
   - A firing is a **page** when its alert says `notify: page` and no cause of it (the specs'
     `symptom_of` links, as generated into Alertmanager's inhibitions) was firing with the same labels
     when it started: Alertmanager mutes those, and the notifier joins what gets through.

Prints:
- pages, and the share that belong to a fault;
- pages per fault, by fault type;
- faults that paged nobody;
- pages outside faults, by rule;
- tickets, in the same terms.

Section `alert-quality-week` of docs/benchmarks.md only with `--record`.
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
from vigil.aiops.benchmark_record import add_record_option, machine_summary, utc_now, write_section  # noqa: E402
from vigil.aiops.history.openmetrics import write_openmetrics  # noqa: E402
from vigil.common.symptoms import Cause  # noqa: E402
from vigil.exporters.nvml_collector import NvmlCollector  # noqa: E402
from vigil.exporters.sim.faults import Fault  # noqa: E402
from vigil.exporters.sim.nvml import SimulatedNvml  # noqa: E402
from vigil.rules import default_spec_paths, load_specs  # noqa: E402
from vigil.rules.backtest_run import Settings, backtest  # noqa: E402
from vigil.stack.tsdb_readback import prometheus_on  # noqa: E402

DOC = REPO / "docs" / "benchmarks.md"
SECTION = "alert-quality-week"
RATE_PER_GPU_DAY = 419 / (54 * 16_384)  # Llama 3: unexpected interruptions per GPU-day
# (simulator fault, weight: the Llama 3 report's share of interruptions with that cause, in %)
FAULT_MIX = (("xid79", 30.1), ("ecc-dbe", 17.2), ("row-remap-failure", 4.5), ("node-down", 7.6),
             ("overheat", 1.4), ("nvlink-errors", 1.7))
AFTER_CLEAR_S = 1800.0  # a firing this long after its fault was cleared still belongs to it
# the rest of a healthy stack, up all week: one target each (the simulated fault schedule is the GPUs')
CONTROL_PLANE = ("prometheus", "alertmanager", "vigil-notifier", "vigil-aiops", "vigil-node-health")
HEARTBEAT = "Watchdog"  # always firing by design: it goes to the notifier's heartbeat, never pages
DAY_S = 86_400.0


@dataclass(frozen=True)
class Drawn:
    fault: str
    node: str
    gpu: int | None  # None: the whole node
    on: float
    off: float


class Clock:
    """The simulated clock each node's simulator and collector read."""

    def __init__(self, t: float):
        self.t = t

    def __call__(self) -> float:
        return self.t


def draw_faults(rng: np.random.Generator, nodes: list[str], gpus: int, start: float, end: float,
                scale: float) -> list[Drawn]:
    names, weights = zip(*FAULT_MIX)
    p = np.array(weights) / sum(weights)
    drawn: list[Drawn] = []
    busy: dict[str, list[tuple[float, float]]] = defaultdict(list)
    mean = RATE_PER_GPU_DAY * scale * (end - start) / DAY_S
    for node in nodes:
        for gpu in range(gpus):
            for _ in range(rng.poisson(mean)):
                fault = str(rng.choice(names, p=p))
                on = float(rng.uniform(start, end - 4 * 3600))
                off = on + float(rng.uniform(3600, 4 * 3600))
                if any(a < off + AFTER_CLEAR_S and on < b + AFTER_CLEAR_S for a, b in busy[node]):
                    continue  # one fault at a time on a node
                busy[node].append((on, off))
                drawn.append(Drawn(fault, node, None if fault == "node-down" else gpu, on, off))
    return sorted(drawn, key=lambda d: d.on)


def node_history(args: tuple) -> tuple[str, int]:
    """Write one node's week to an OpenMetrics file; returns (path, samples)."""
    node, index, gpus, start, end, step, faults, wanted, out = args
    clock = Clock(start)
    sim = SimulatedNvml(node, gpus, clock=clock)
    collector = NvmlCollector(sim, node, watch_xids=False, expected_gpus=gpus, clock=clock)
    target = {"job": "vigil-gpu", "instance": f"10.0.{index // 250}.{index % 250}:9400"}
    series: dict[tuple, tuple[list, list]] = {}
    types: dict[str, str] = {}
    mine = [f for f in faults if f.node == node]

    def up(job: str, instance: str, value: float, **labels: str) -> None:
        key = ("up", tuple(sorted({"job": job, "instance": instance, **labels}.items())))
        timestamps, values = series.setdefault(key, ([], []))
        timestamps.append(clock.t)
        values.append(value)
    active: set[int] = set()
    for n in range(int((end - start) / step) + 1):
        clock.t = start + n * step
        for i, f in enumerate(mine):
            if f.gpu is not None and i not in active and f.on <= clock.t < f.off:
                sim.inject(Fault(f.fault, node, f.gpu, clock.t))
                active.add(i)
            elif f.gpu is not None and i in active and clock.t >= f.off:
                sim.reset(f.gpu)
                active.discard(i)
        down = any(f.gpu is None and f.on <= clock.t < f.off for f in mine)  # the host: both exporters
        up("vigil-gpu", target["instance"], 0.0 if down else 1.0, node=node)
        up("node-exporter", target["instance"].replace(":9400", ":9100"), 0.0 if down else 1.0, node=node)
        if index == 0:
            for job in CONTROL_PLANE:
                up(job, f"control-plane:{CONTROL_PLANE.index(job) + 9090}", 1.0)
        if down:
            continue
        collector.refresh()
        for family in collector.collect():
            for sample in family.samples:
                if sample.name in wanted and not sample.name.endswith("_created"):
                    types[sample.name] = "counter" if family.type == "counter" else "gauge"
                    key = (sample.name, tuple(sorted({**sample.labels, **target}.items())))
                    timestamps, values = series.setdefault(key, ([], []))
                    timestamps.append(clock.t)
                    values.append(sample.value)
    path = Path(out) / f"{node}.om"
    samples = write_openmetrics(path, [(name, dict(labels), ts, vs) for (name, labels), (ts, vs) in series.items()],
                                types=types)
    return str(path), samples


def wanted_metrics(ruleset) -> set[str]:
    """Metric names the shipped alerts and records mention (a superset is fine)."""
    import re
    text = "\n".join([a.expr for a in ruleset.alerts] + [r.expr for r in ruleset.records])
    return set(re.findall(r"\b(vigil_[a-z0-9_]+|up)\b", text))


def muted(firing, alert, ruleset, by_alert: dict[str, list]) -> bool:
    """Whether a cause of `alert` (`RuleSet.causes_of`, the specs' links) fired with equal labels when
    `firing` began."""
    labels = dict(firing.labels)
    for link in ruleset.causes_of(alert):
        cause = Cause(link.source, link.equal)
        if any(cause.matches(labels, dict(other.labels)) and other.start <= firing.start <= other.end
               for other in by_alert.get(link.source, [])):
            return True
    return False


def belongs(firing, faults: list[Drawn]) -> Drawn | None:
    labels = dict(firing.labels)
    for f in faults:
        if not f.on <= firing.start <= f.off + AFTER_CLEAR_S:
            continue
        if "node" in labels and labels["node"] != f.node:
            continue
        if f.gpu is not None and "gpu" in labels and labels["gpu"] != str(f.gpu):
            continue
        return f
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=64)
    parser.add_argument("--gpus", type=int, default=2, help="GPUs a node (the simulator's cost grows with it)")
    parser.add_argument("--days", type=float, default=7.0)
    parser.add_argument("--step", type=float, default=180.0, help="seconds between two samples")
    parser.add_argument("--scale", type=float, default=80.0, help="times the published fault rate")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--json", type=Path, help="also write the figures here")
    add_record_option(parser)
    args = parser.parse_args()
    ruleset = load_specs(default_spec_paths())
    notify = {a.name: a.notify or "page" for a in ruleset.alerts}
    end = math.floor(time.time() / args.step) * args.step - 3600
    start = end - args.days * DAY_S
    nodes = [f"node-{i}" for i in range(1, args.nodes + 1)]
    faults = draw_faults(np.random.default_rng(args.seed), nodes, args.gpus, start, end, args.scale)
    print(f"{len(faults)} faults drawn: {dict(Counter(f.fault for f in faults))}", flush=True)
    wanted = wanted_metrics(ruleset)
    with tempfile.TemporaryDirectory(prefix="vigil-bench-week-") as work:
        work = Path(work)
        built = time.perf_counter()
        jobs = [(node, i, args.gpus, start, end, args.step, faults, wanted, str(work)) for i, node in enumerate(nodes)]
        with ProcessPoolExecutor(args.workers) as pool:
            written = list(pool.map(node_history, jobs))
        samples = sum(n for _, n in written)
        for path, _ in written:
            subprocess.run(["promtool", "tsdb", "create-blocks-from", "openmetrics", "--max-block-duration=24h",
                            path, str(work / "data")], check=True, capture_output=True)
            Path(path).unlink()
        print(f"{samples:,} samples of {args.nodes} nodes x {args.gpus} GPUs x {args.days:g} days written in "
              f"{time.perf_counter() - built:.0f} s", flush=True)
        evaluated = time.perf_counter()
        with prometheus_on(work / "data", work) as prometheus:
            result = backtest(prometheus, ruleset, start, end, Settings(60.0))
        print(f"backtest of {len(result.reports)} alerts in {time.perf_counter() - evaluated:.0f} s", flush=True)
    by_alert = {r.alert: r.firings for r in result.reports}
    pages, tickets = [], []
    for report in result.reports:
        if report.alert == HEARTBEAT:
            continue
        for firing in report.firings:
            if muted(firing, ruleset.alert(report.alert), ruleset, by_alert):
                continue
            (pages if notify[report.alert] == "page" else tickets).append((report.alert, firing, belongs(firing, faults)))
    in_fault = [p for p in pages if p[2] is not None]
    per_fault = Counter(id(p[2]) for p in in_fault)
    ticketed = Counter(id(t[2]) for t in tickets if t[2] is not None)
    silent = [f for f in faults if id(f) not in per_fault and id(f) not in ticketed]
    by_type: dict[str, list[int]] = defaultdict(list)
    tickets_by_type: dict[str, int] = Counter()
    for f in faults:
        by_type[f.fault].append(per_fault.get(id(f), 0))
        tickets_by_type[f.fault] += ticketed.get(id(f), 0)
    outside = Counter(alert for alert, _, fault in pages if fault is None)
    figures = {
        "faults": len(faults), "pages": len(pages), "pages_in_faults": len(in_fault),
        "share_in_faults": round(len(in_fault) / len(pages), 3) if pages else None,
        "faults_without_page_or_ticket": [f"{f.fault}@{f.node}" + ("" if f.gpu is None else f"/{f.gpu}") for f in silent],
        "pages_per_fault": {k: {"faults": len(v), "mean": round(sum(v) / len(v), 2), "max": max(v),
                                "tickets": tickets_by_type[k]} for k, v in by_type.items()},
        "outside_by_rule": dict(outside.most_common()), "tickets": len(tickets),
        "tickets_outside_faults": dict(Counter(a for a, _, f in tickets if f is None).most_common()),
        "errors": result.errors, "samples": samples,
    }
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2))
    rows = [f"| {k} | {v['faults']} | {v['mean']} | {v['max']} | {v['tickets']} |"
            for k, v in sorted(figures["pages_per_fault"].items())]
    share = f"{figures['share_in_faults']:.1%}" if figures["share_in_faults"] is not None else "-"
    body = "\n".join([
        "## Alert quality over a simulated week (`python bench/alert_quality/week.py`)",
        "",
        f"Machine: {machine_summary()}. Date: {utc_now()}. {args.nodes} simulated nodes x {args.gpus} GPUs, "
        f"{args.days:g} days at one sample every {args.step:g} s ({samples:,} samples), every shipped alert "
        f"backtested; {len(faults)} faults drawn at {args.scale:g}x Llama 3's rate (seed {args.seed}).",
        "",
        f"Pages: **{len(pages)}**, of which **{len(in_fault)} ({share})** belong to a fault. Faults that neither "
        f"paged nor filed a ticket: {len(silent)}" + (f" ({', '.join(figures['faults_without_page_or_ticket'][:10])})" if silent else "") + ".",
        "",
        "| fault | drawn | pages per fault (mean) | max | tickets |",
        "|---|---:|---:|---:|---:|",
        *rows,
        "",
        "Pages outside faults, by rule: " + (", ".join(f"{k} {v}" for k, v in outside.most_common()) or "none") + ".",
        f"Tickets: {len(tickets)}, outside faults by rule: "
        + (", ".join(f"{k} {v}" for k, v in figures["tickets_outside_faults"].items()) or "none") + ".",
        "",
        "What this does not judge: the simulated GPUs have no faults but the drawn ones (their load follows its "
        "daily pattern with noise), no training jobs run (the job alerts stay quiet), and the stack's own services "
        "are healthy all week; a page counts once per firing of an unmuted `notify: page` alert, as Alertmanager "
        "would send it, before the notifier's own joining and flap damping. `bench/alert_quality/live.py` "
        "judges the running stack.",
    ])
    print(body)
    if result.errors:
        print("rules Prometheus refused:\n" + "\n".join(result.errors))
    if args.record:
        write_section(DOC, SECTION, body)
        print(f"recorded in {DOC} (section {SECTION})")


if __name__ == "__main__":
    main()
