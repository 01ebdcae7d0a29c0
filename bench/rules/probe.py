"""The cost of single rule expressions on a Prometheus that evaluates no rules: the floor under each group.

    .venv/bin/python bench/rules/probe.py [--nodes 2500] [--rounds 6] [--rules A,B,...] [--expr NAME=PROMQL ...]

The simulated fleet and the real Prometheus as in `run.py`, but with an empty rule file. Once every
target is up (and `--warmup` seconds after), each rule's expression from `vigil rules generate` (by
name: an alert or a record), and each `--expr` (a variant to compare with them), is sent `--rounds` times as an instant query with `stats=all`; printed per
rule: the median and smallest `innerEvalTime` (the evaluation inside Prometheus, without queueing, HTTP or
JSON) and the series the expression reads per evaluation (`stats.samples.totalQueryableSamples` of the
instant query, which counts one sample a series for a plain selector). On shared cores the figures move
with the load; prints only, records nothing.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import requests
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
import stack  # noqa: E402  (bench/rules/stack.py)
from rules_report import SCRAPE_S, UNIT_RULES  # noqa: E402
from run import targets_up  # noqa: E402

DEFAULT_RULES = (*(u.split("/", 1)[1] for u in UNIT_RULES), "GpuMemoryNearlyFull", "GpuPowerThrottling",
                 "GpuThermalThrottling", "GpuNvlinkErrorsHigh", "GpuFallenOffBus")


def expressions(rule_file: Path, names: list[str]) -> dict[str, str]:
    """name -> expression of each named alert or record in a generated rule file; exits on an unknown name."""
    found = {}
    for group in yaml.safe_load(rule_file.read_text())["groups"]:
        for rule in group["rules"]:
            found[rule.get("alert") or rule.get("record")] = rule["expr"]
    missing = [n for n in names if n not in found]
    if missing:
        raise SystemExit(f"not in the generated rules: {', '.join(missing)}")
    return {n: found[n] for n in names}


def probe(url: str, exprs: dict[str, str], rounds: int) -> dict[str, dict]:
    timings: dict[str, list[tuple[float, int]]] = {name: [] for name in exprs}
    for _ in range(rounds):
        for name, expr in exprs.items():
            data = requests.get(f"{url}/api/v1/query", params={"query": expr, "stats": "all"}, timeout=120).json()
            stats = data["data"]["stats"]
            timings[name].append((1000 * stats["timings"]["innerEvalTime"],
                                  int(stats["samples"].get("totalQueryableSamples", 0))))
    return {name: {"median_ms": statistics.median(t for t, _ in v), "min_ms": min(t for t, _ in v),
                   "samples": statistics.median(s for _, s in v)} for name, v in timings.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=2500)
    parser.add_argument("--gpus", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--warmup", type=int, default=40, help="seconds after every target is up")
    parser.add_argument("--rules", default=",".join(DEFAULT_RULES), help="alert or record names, comma-separated")
    parser.add_argument("--expr", action="append", default=[], metavar="NAME=PROMQL",
                        help="also an expression of your own (repeatable), e.g. a cheaper form of a rule")
    args = parser.parse_args()
    extra = dict(item.split("=", 1) for item in args.expr if "=" in item)
    if len(extra) != len(args.expr):
        parser.error("--expr takes NAME=PROMQL")
    with tempfile.TemporaryDirectory(prefix="vigil-bench-probe-") as tmp:
        work = Path(tmp)
        exprs = {**expressions(stack.generate_rules(work / "rules"), [r for r in args.rules.split(",") if r]), **extra}
        empty = work / "none.yml"
        empty.write_text("groups: []\n")
        with stack.fleet(args.nodes, args.gpus, 120, work) as (_, fleet_port):
            port = stack.free_port()
            with stack.prometheus(stack.prometheus_config(fleet_port, args.nodes, empty, port, SCRAPE_S), work) as (prom, url):
                stack.wait_until(lambda: targets_up(url) >= args.nodes, 60 + args.nodes / 20, "every target up",
                                 step=2, process=prom)
                time.sleep(args.warmup)
                results = probe(url, exprs, args.rounds)
    print(f"{args.nodes} nodes x {args.gpus} GPUs, no rules loaded, {args.rounds} rounds; innerEvalTime ms")
    print("| rule | median ms | min ms | samples read | µs a sample |\n|---|---:|---:|---:|---:|")
    for name, r in results.items():
        per = 1000 * r["median_ms"] / r["samples"] if r["samples"] else float("nan")
        print(f"| {name} | {r['median_ms']:.0f} | {r['min_ms']:.0f} | {r['samples']:,.0f} | {per:.1f} |")


if __name__ == "__main__":
    main()
