"""Rule evaluation cost of the whole shipped catalog over a simulated fleet, as the real Prometheus runs it.

    .venv/bin/python bench/rules/run.py [--nodes 250,1250,2500] [--gpus 8] [--evaluations 4] [--json F] [--rules-file F] [--record]
        [--steady [--steady-days 7] [--xid-rate 0.47]] [--warmup S]

For each size: the simulated fleet in one process (`vigil exporter gpu --backend sim --single-port`,
each node its own scrape target), the real Prometheus scraping it every 15 s with the rules of
`vigil rules generate` evaluated every 15 s. Once every target is up, it watches `--evaluations`
evaluations of every rule group and reports, per group, the last and the largest
`prometheus_rule_group_last_duration_seconds`, and the largest of the evaluations that overlapped none of
Prometheus' Go GC cycles (Prometheus runs with `GODEBUG=gctrace=1`; a cycle's mark phase over a heap of
gigabytes takes seconds of wall time on two cores and slows every group running meanwhile); a table of the
10 costliest rules (median and largest
`/api/v1/rules` evaluationTime over the evaluations seen);
targets up; Prometheus CPU (rate of `process_cpu_seconds_total` over the window), RSS and head series;
the fleet's threads, CPU and RSS; and the load average. Then the growth between sizes: linear when the
time ratio is close to the node ratio. Last, the rule work: the sum of the rules' medians a minute and
each group's an evaluation, in units of a plain one-series-a-GPU selector measured in the same run (the
seconds swing with the load of shared cores; the units much less, so runs before and after a rule change
compare in units). `--json F` also writes every figure, each rule's evaluation times and each group's
interval included, to F (to compare two runs rule by rule).

Without `--steady` the first minutes of a Prometheus are measured: `offset 10m` and long ranges read less
history than in steady state. With `--steady [--steady-days 7] [--xid-rate 0.47]` each size's Prometheus
starts on a week of history (hardware XIDs at Llama 3's published rate, the occasions record
`GpuXidRecurring` counts, the SLO's fleet records: `steady.py`) and is watched after a 31-minute warm-up,
so every range window is full. The machine's cores may be shared with other work: the load average is
printed. Writes section `rules` (`rules-steady` with `--steady`) of docs/benchmarks.md only with `--record`.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

import requests
from prometheus_client.parser import text_string_to_metric_families

sys.path.insert(0, str(Path(__file__).resolve().parent))
import stack  # noqa: E402  (bench/rules/stack.py)
import steady  # noqa: E402  (bench/rules/steady.py)
from rules_report import (  # noqa: E402  (bench/rules/rules_report.py)
    SCRAPE_S, STEADY_WARMUP_S, report,
)

sys.path.insert(0, str(stack.ROOT))
from vigil.aiops.benchmark_record import add_record_option, write_section  # noqa: E402

SECTION = "rules"


def prom_metrics(url: str) -> dict[str, dict[tuple, float]]:
    """Prometheus' own /metrics: {name: {sorted label items: value}}."""
    text = requests.get(f"{url}/metrics", timeout=30).text
    found: dict[str, dict[tuple, float]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found.setdefault(sample.name, {})[tuple(sorted(sample.labels.items()))] = sample.value
    return found


def one(metrics: dict, name: str) -> float:
    values = metrics.get(name) or {}
    return next(iter(values.values()), float("nan"))


def targets_up(url: str) -> int:
    result = requests.get(f"{url}/api/v1/query", params={"query": 'count(up{job="vigil-gpu"} == 1)'},
                          timeout=30).json()["data"]["result"]
    return int(float(result[0]["value"][1])) if result else 0


def measure(nodes: int, args: argparse.Namespace, rules: Path, workdir: Path) -> dict:
    control = stack.free_port()
    counters, history = [], None
    if args.steady:  # the week a young Prometheus lacks, in its TSDB before it starts (steady.py)
        end = time.time() - 60
        counters = steady.xid_counters(nodes, args.gpus, args.steady_days, args.xid_rate, end)
        history = steady.backfill(workdir, rules, counters, nodes * args.gpus, args.steady_days, end)
        print(f"{nodes} nodes: {history['events']} XID events on {history['counters']} counters over "
              f"{args.steady_days} days backfilled in {history['seconds']:.0f} s", flush=True)
    with stack.fleet(nodes, args.gpus, args.fleet_refresh, workdir, control) as (fleet, fleet_port):
        prom_port = stack.free_port()
        config = stack.prometheus_config(fleet_port, nodes, rules, prom_port, SCRAPE_S)
        with stack.prometheus(config, workdir) as (prom, url):
            stack.wait_until(lambda: targets_up(url) >= nodes, 60 + nodes / 20, f"{nodes} targets up", step=2, process=prom)
            steady.carry_on(f"http://127.0.0.1:{control}", counters)
            time.sleep(args.warmup)  # the first rounds create every series: not the steady state measured
            result = observe(url, prom.pid, fleet.pid, nodes, args.evaluations)
            result["steady"] = history
            log = (workdir / "prometheus.log").read_text(errors="replace")
            return with_gc(result, stack.gc_cycles(log, stack.started_at(prom.pid)))


def with_gc(result: dict, cycles: list[tuple[float, float]]) -> dict:
    """`result` with Prometheus' Go GC cycles during the window, and per group the largest evaluation that
    overlapped none of them: on two shared cores a GC cycle of a heap of gigabytes stalls every rule group
    that runs meanwhile (mark assists and the mark workers take the cores), which says nothing of the rules."""
    begin, end = result["window"]
    during = [(a, b) for a, b in cycles if b >= begin and a <= end]
    result["gc_cycles"] = len(during)
    result["gc_mark_ms"] = sorted(round(1000 * (b - a)) for a, b in during)
    for group, figures in result["groups"].items():
        clear = [ms for stamp, ms in result["evaluations"][group]
                 if not any(a <= stamp + ms / 1000 and stamp <= b for a, b in during)]
        figures["max_outside_gc_ms"] = max(clear) if clear else None
        figures["during_gc"] = len(result["evaluations"][group]) - len(clear)
    return result


def evaluated_after(stamp: str, started: float) -> bool:
    """Whether a rule's `lastEvaluation` (RFC 3339; Prometheus' zero time before the first) is after `started`."""
    try:
        return datetime.fromisoformat(stamp).timestamp() > started
    except ValueError:
        return False


def observe(url: str, prom_pid: int, fleet_pid: int, nodes: int, evaluations: int) -> dict:
    """Watch `evaluations` evaluations of every group; everything else is read over the same window."""
    started, m0, f0 = time.time(), prom_metrics(url), stack.proc_figures(fleet_pid)
    seen: dict[str, dict[float, float]] = {}  # group -> {evaluation timestamp: duration}
    samples: dict[tuple[str, str], dict[str, float]] = {}  # (group, rule) -> {lastEvaluation: evaluationTime}
    up_min, load_max, threads_max = nodes, 0.0, f0["threads"]
    listed = requests.get(f"{url}/api/v1/rules", timeout=30).json()["data"]["groups"]
    # a group evaluated every minute is watched over the same span: fewer evaluations, at least two (one
    # evaluation of a group says more about the machine at that moment than about its rules)
    wanted = {g["name"]: max(2, round(evaluations * SCRAPE_S / g["interval"])) for g in listed}
    deadline = started + SCRAPE_S * evaluations + 2 * max(g["interval"] for g in listed) + 30
    while time.time() < deadline:
        try:  # an overloaded Prometheus may not answer a poll in time: the next one counts
            metrics = prom_metrics(url)
            durations = metrics.get("prometheus_rule_group_last_duration_seconds", {})
            stamps = metrics.get("prometheus_rule_group_last_evaluation_timestamp_seconds", {})
            for labels, stamp in stamps.items():
                group = dict(labels)["rule_group"].split(";", 1)[1]
                if stamp > started and labels in durations:
                    seen.setdefault(group, {})[stamp] = durations[labels]
            for group in requests.get(f"{url}/api/v1/rules", timeout=30).json()["data"]["groups"]:
                for rule in group["rules"]:
                    key = (group["name"], rule["name"])
                    stamp = rule.get("lastEvaluation", "")
                    if evaluated_after(stamp, started):  # not the evaluation before the window
                        samples.setdefault(key, {})[stamp] = rule.get("evaluationTime", 0.0)
            up_min = min(up_min, targets_up(url))
            load_max = max(load_max, os.getloadavg()[0])
            threads_max = max(threads_max, stack.proc_figures(fleet_pid)["threads"])
        except requests.RequestException as error:
            print(f"poll skipped: {error.__class__.__name__}", flush=True)
        if all(len(seen.get(name, {})) >= n for name, n in wanted.items()):
            break
        time.sleep(3)
    m1, f1, window = prom_metrics(url), stack.proc_figures(fleet_pid), time.time() - started
    groups = {g: {"last_ms": 1000 * d[max(d)], "max_ms": 1000 * max(d.values()), "evaluations": len(d)}
              for g, d in sorted(seen.items())}
    return {
        "nodes": nodes, "groups": groups, "window": [started, time.time()],
        "evaluations": {g: sorted([stamp, 1000 * ms] for stamp, ms in d.items()) for g, d in sorted(seen.items())}, "targets_up_min": up_min, "targets_up_end": targets_up(url),
        "rules_ms": {f"{g}/{r}": sorted(1000 * v for v in by.values()) for (g, r), by in sorted(samples.items())},
        "intervals_s": {g["name"]: g["interval"] for g in listed},
        "prom_cpu": (one(m1, "process_cpu_seconds_total") - one(m0, "process_cpu_seconds_total")) / window,
        "prom_rss_mib": one(m1, "process_resident_memory_bytes") / 2**20,
        "head_series": one(m1, "prometheus_tsdb_head_series"),
        "fleet_cpu": (f1["cpu_s"] - f0["cpu_s"]) / window, "fleet_rss_mib": f1["rss_mib"],
        "fleet_threads": threads_max, "load_max": load_max,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", default="250,1250,2500", help="fleet sizes, comma-separated")
    parser.add_argument("--gpus", type=int, default=8)
    parser.add_argument("--evaluations", type=int, default=4, help="evaluations watched per group and size")
    parser.add_argument("--warmup", type=int, help="seconds after every target is up before measuring "
                        f"[default: 45; with --steady {STEADY_WARMUP_S}, every 30-minute window full]")
    parser.add_argument("--steady", action="store_true", help="backfill a week of XID history first (steady.py)")
    parser.add_argument("--steady-days", type=int, default=7, help="days of history --steady backfills")
    parser.add_argument("--xid-rate", type=float, default=steady.PUBLISHED_RATE,
                        help="hardware XIDs per 1,000 GPU-days in the --steady history [default: Llama 3's]")
    parser.add_argument("--fleet-refresh", type=int, default=120, help="seconds between the fleet's NVML cycles")
    parser.add_argument("--json", type=Path, help="also write every figure measured (groups, rules) to this file")
    parser.add_argument("--rules-file", type=Path,
                        help="rules written earlier by `vigil rules generate` (for a machine where only the "
                             "exporter's dependencies are installed) [default: generate them now]")
    add_record_option(parser)
    args = parser.parse_args()
    args.warmup = args.warmup if args.warmup is not None else STEADY_WARMUP_S if args.steady else 45
    sizes = [int(n) for n in args.nodes.split(",")]
    args.load_at_start = os.getloadavg()[0]
    print(f"{os.cpu_count()} cores, load average {args.load_at_start:.1f} at start (shared with other work)")
    results = []
    with tempfile.TemporaryDirectory(prefix="vigil-bench-rules-") as tmp:
        rules = args.rules_file or stack.generate_rules(Path(tmp) / "rules")
        for nodes in sizes:
            workdir = Path(tmp) / f"n{nodes}"
            workdir.mkdir()
            began = time.monotonic()
            results.append(measure(nodes, args, rules, workdir))
            print(f"{nodes} nodes measured in {time.monotonic() - began:.0f} s", flush=True)
            if args.json:  # after each size: a run cut short keeps the sizes it measured
                args.json.write_text(json.dumps({"load_at_start": args.load_at_start, "results": results}, indent=1))
    text = report(results, args)
    print(text)
    if args.record:
        section, title = ("rules-steady", "## Rule evaluation in steady state") if args.steady else (SECTION, "## Rule evaluation")
        write_section(stack.ROOT / "docs" / "benchmarks.md", section, f"{title}\n\n" + text)


if __name__ == "__main__":
    main()
