"""Measured limits of one node: the largest simulated fleet one Prometheus holds at a 15 s scrape with
every rule group under 1 s, then the same fleet over hashmod shards remote-writing to VictoriaMetrics,
and a capacity table extrapolated to 100,000 GPUs.

    .venv/bin/python bench/scaling/run.py [--nodes 500,1000,2000] [--shards 2] [--gpus 8] [--quick] [--record]

(1) One Prometheus per size (smallest first, as `bench/rules/run.py` runs it: the whole catalog, each
simulated node its own target): the largest rule-group evaluation, scrape duration p99, RSS, head series,
samples ingested per second; a size passes when every group stays under 1 s, every target is up and the
scrape p99 is under 15 s. The sweep stops at the first size that fails and names its slowest group.
(2) `--shards` Prometheus over the same fleet (the first failing size, or the largest if none failed),
each keeping its `hashmod` part of the targets and evaluating the rules that need one node's series
only (`vigil.rules.shard_split`), all remote-writing to one VictoriaMetrics; vmalert evaluates the global rules over
VictoriaMetrics. Per shard: group max, RSS; VictoriaMetrics: bytes per stored sample, disk growth.
(3) The capacity table (`capacity.py`). Writes section `scaling` of docs/benchmarks.md only with `--record`.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
import capacity  # noqa: E402
import measure  # noqa: E402
from reuse import stack  # noqa: E402

sys.path.insert(0, str(stack.ROOT))
from vigil.aiops.benchmark_record import add_record_option, machine_summary, utc_now, write_section  # noqa: E402
from vigil.rules import shard_split as split  # noqa: E402
from vigil.rules.dump import dump_yaml  # noqa: E402

SECTION = "scaling"
# what a run's `--json` keeps of how it ran, for `--report-from` to write its report again
RUN_ARGS = ("nodes", "shards", "gpus", "quick", "evaluations", "warmup", "load_at_start", "date")


def single_table(results: list[dict], gpus: int) -> list[str]:
    lines = ["| Nodes (GPUs) | largest group (ms) | scrape p99 | Prometheus RSS | head series | samples/s | "
             "CPU | targets up | under limit |", "|" + "---|" * 9]
    for r in results:
        lines.append(f"| {r['nodes']:,} ({r['nodes'] * gpus:,}) | {r['group_max_ms']:.0f} ({r['slowest_group']}) | "
                     f"{r['scrape_p99_s']:.2f} s | {r['prom_rss_mib']:,.0f} MiB | {r['head_series']:,.0f} | "
                     f"{r['samples_per_s']:,.0f} | {r['prom_cpu']:.2f} cores | {r['targets_up_end']} | "
                     f"{'yes' if r['passed'] else 'no'} |")
    return lines


def sharded_lines(s: dict, gpus: int) -> list[str]:
    lines = [f"Sharded: {s['nodes']:,} nodes ({s['nodes'] * gpus:,} GPUs) over {len(s['shards'])} shards "
             f"(targets per shard {s['expected']}).", "",
             "| Shard | targets up | largest group (ms) | scrape p99 | RSS | head series | samples/s | under limit |",
             "|" + "---|" * 8]
    for i, r in enumerate(s["shards"]):
        lines.append(f"| {i} | {r['targets_up_end']} | {r['group_max_ms']:.0f} ({r['slowest_group']}) | "
                     f"{r['scrape_p99_s']:.2f} s | {r['prom_rss_mib']:,.0f} MiB | {r['head_series']:,.0f} | "
                     f"{r['samples_per_s']:,.0f} | {'yes' if r['passed'] else 'no'} |")
    slowest = max(s["global_groups"].items(), key=lambda kv: kv[1], default=("-", float("nan")))
    lines += ["", f"Global rules (vmalert over VictoriaMetrics): slowest group {slowest[0]} {slowest[1]:.0f} ms "
              "(largest `vmalert_iteration_duration_seconds` quantile seen).",
              f"VictoriaMetrics: {s['vm_rows_per_s']:,.0f} samples/s received, {s['vm_bytes_per_sample']:.2f} bytes "
              f"per stored sample in its data parts ({s['vm_rows']:,.0f} rows; {s['vm_size_bytes'] / 2**20:,.1f} MiB with the "
              f"series index after "
              f"{s['window_s']:.0f} s of measurement; young parts compress worse than merged ones, so this "
              f"over-estimates), data directory growth {s['vm_growth_bytes_per_h'] / 2**20:,.0f} MiB/h "
              f"= {s['vm_growth_bytes_per_h'] * 24 / 2**30:,.2f} GiB/day, RSS {s['vm_rss_mib']:,.0f} MiB."]
    return lines


def measured_figures(results: list[dict], s: dict, gpus: int, steady: dict | None = None) -> capacity.Measured:
    """The capacity inputs; with `steady` (`steady_store.py --json`), each node's own exporters' series and
    the bytes per sample of a merged store instead of the sharded run's young parts."""
    passed = [r for r in results if r["passed"]]
    best = passed[-1] if passed else results[0]
    fleet_gpus = best["nodes"] * gpus
    vm_series = sum(r["head_series"] for r in s["shards"])
    return capacity.Measured(
        gpus_per_shard=fleet_gpus if passed else 0, series_per_gpu=best["head_series"] / fleet_gpus,
        rss_mib_per_series=best["prom_rss_mib"] / best["head_series"],
        samples_per_gpu_s=s["vm_rows_per_s"] / (s["nodes"] * gpus),
        vm_bytes_per_sample=steady["merged_bytes_per_sample"] if steady else s["vm_bytes_per_sample"],
        largest_measured_gpus=max(r["nodes"] for r in results) * gpus,
        node_series=sum(steady["per_node"].values()) if steady else 0.0, gpus_per_node=gpus,
        scrape_s=measure.SCRAPE_S, vm_rss_mib_per_series=s["vm_rss_mib"] / vm_series if vm_series else 0.0)


def nodes_part(m: capacity.Measured, steady: dict | None) -> str:
    if not steady:
        return " (the GPU exporter's and the rules' only: no `--steady` figures)"
    return (f" + {m.node_series:,.0f} series a node's node_exporter and node-health exporter add "
            f"({m.all_series_per_gpu:.1f} per GPU in all)")


def report(results: list[dict], s: dict, reasons: dict[str, str], args) -> str:
    failed = next((r for r in results if not r["passed"]), None)
    limit = [r for r in results if r["passed"]]
    verdict = (f"First size over the limit: {failed['nodes']:,} nodes (slowest group {failed['slowest_group']}, "
               f"{failed['group_max_ms']:.0f} ms). " if failed else
               "No size measured went over the limit: the per-shard capacity below is a lower bound. ")
    verdict += (f"Largest size under it: {limit[-1]['nodes']:,} nodes ({limit[-1]['nodes'] * args.gpus:,} GPUs)."
                if limit else "No size stayed under it.")
    steady = json.loads(args.steady.read_text()) if args.steady else None
    m = measured_figures(results, s, args.gpus, steady)
    lines = [f"Machine: {machine_summary()}. Date: {args.date}. Command: `.venv/bin/python bench/scaling/run.py "
             f"--nodes {args.nodes} --shards {args.shards} --gpus {args.gpus}{' --quick' if args.quick else ''}"
             f"{' --steady F' if args.steady else ''}`. "
             f"Load average at start: {args.load_at_start:.1f} (cores shared with other work). Scrape and "
             f"evaluation every {measure.SCRAPE_S} s; {args.evaluations} evaluations per 15-second group from "
             f"{args.warmup} s after every target is up.", "", "One Prometheus, the whole rule catalog:", "",
             *single_table(results, args.gpus), "", verdict, "", *sharded_lines(s, args.gpus), "",
             f"Rules kept off the shards ({len(reasons)}, run once over the global view): "
             + ", ".join(sorted(reasons)) + ".", "",
             f"Capacity (from the figures above: {m.gpus_per_shard:,} GPUs per shard, {m.series_per_gpu:.1f} head "
             f"series per GPU{nodes_part(m, steady)}, {m.rss_mib_per_series * 2**20 / 1024:.1f} KiB RSS per series, "
             f"{m.all_samples_per_gpu_s:.2f} samples/s per GPU, {m.vm_bytes_per_sample:.2f} bytes per sample in "
             f"VictoriaMetrics ({'merged, `steady_store.py`' if steady else 'young parts: an over-estimate'}), "
             f"{m.vm_rss_mib_per_series * 2**20 / 1024:.2f} KiB of VictoriaMetrics RSS per series; AIOps memory from "
             "the curve of `bench/aiops/train_memory.py` at one series per GPU of a shard; one copy, double the "
             "shards for replicas; rows above the largest fleet run "
             f"({m.largest_measured_gpus:,} GPUs) are an extrapolation):", ""]
    try:
        lines += capacity.capacity_table(m, (m.gpus_per_shard, *capacity.DEFAULT_SIZES))
    except ValueError as error:
        lines.append(f"No capacity table: {error}.")
    if steady:  # the simulated values compress better than a real GPU's: give the young parts' figure beside
        young = replace(m, vm_bytes_per_sample=s["vm_bytes_per_sample"])
        [largest] = capacity.capacity_rows(young, (capacity.DEFAULT_SIZES[-1],))
        lines += ["", f"The merged store's {m.vm_bytes_per_sample:.2f} bytes per sample come from the simulated fleet, "
                  "whose values are smoother than a real GPU's (many hold still): a lower bound. With the sharded "
                  f"run's young parts ({s['vm_bytes_per_sample']:.2f} bytes, an upper bound) the "
                  f"{largest.gpus:,}-GPU row would need {largest.vm_gib_per_day:,.1f} GiB a day."]
    return "\n".join(lines)


def measure_all(args) -> tuple[list[dict], dict, dict[str, str]]:
    """One Prometheus per size until one fails, then the shards: (single results, sharded figures, the
    rules kept off the shards with why)."""
    sizes = sorted(int(n) for n in args.nodes.split(","))
    args.load_at_start, args.date = os.getloadavg()[0], utc_now()
    print(f"{os.cpu_count()} cores, load average {args.load_at_start:.1f} at start (shared with other work)", flush=True)
    results = []
    with tempfile.TemporaryDirectory(prefix="vigil-bench-scaling-") as tmp:
        rules = stack.generate_rules(Path(tmp) / "rules")
        shard_rules, global_rules, reasons = split.split_rule_file(yaml.safe_load(rules.read_text()))
        (Path(tmp) / "shard-rules.yml").write_text(dump_yaml(shard_rules))
        for nodes in sizes:
            workdir, began = Path(tmp) / f"single-{nodes}", time.monotonic()
            workdir.mkdir()
            results.append(measure.single(nodes, args, rules, workdir))
            print(f"one Prometheus, {nodes} nodes: largest group {results[-1]['group_max_ms']:.0f} ms, "
                  f"measured in {time.monotonic() - began:.0f} s", flush=True)
            if not results[-1]["passed"]:
                break
        nodes, workdir, began = results[-1]["nodes"], Path(tmp) / "sharded", time.monotonic()
        workdir.mkdir()
        shard_figures = measure.sharded(nodes, args.shards, args, Path(tmp) / "shard-rules.yml", global_rules, workdir)
        print(f"{args.shards} shards, {nodes} nodes: measured in {time.monotonic() - began:.0f} s", flush=True)
    return results, shard_figures, reasons


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", default="500,1000,2000", help="fleet sizes, comma-separated, smallest first")
    parser.add_argument("--shards", type=int, default=2)
    parser.add_argument("--gpus", type=int, default=8)
    parser.add_argument("--evaluations", type=int, default=2, help="evaluations watched per 15-second group")
    parser.add_argument("--warmup", type=int, default=30, help="seconds after every target is up before measuring")
    parser.add_argument("--fleet-refresh", type=int, default=120, help="seconds between the fleet's NVML cycles")
    parser.add_argument("--quick", action="store_true", help="a smoke run: 100 nodes, short warm-up (about 5 minutes)")
    parser.add_argument("--json", type=Path, help="also write every figure measured to this file")
    parser.add_argument("--report-from", type=Path, help="write the report from an earlier run's `--json` "
                        "figures instead of measuring (with `--steady`, the capacity table from both)")
    parser.add_argument("--steady", type=Path, help="`steady_store.py --json` figures: each node's own series "
                        "and a merged store's bytes per sample for the capacity table")
    add_record_option(parser)
    args = parser.parse_args()
    if args.quick:
        args.nodes, args.warmup = ("100" if args.nodes == parser.get_default("nodes") else args.nodes), 10
    if args.report_from:  # the figures of an earlier run: only the report (and its capacity table) again
        earlier = json.loads(args.report_from.read_text())
        results, shard_figures, reasons = earlier["single"], earlier["sharded"], earlier["global_rules"]
        for name in RUN_ARGS:
            setattr(args, name, earlier["args"][name])
    else:
        results, shard_figures, reasons = measure_all(args)
    text = report(results, shard_figures, reasons, args)
    print(text)
    if args.json:
        args.json.write_text(json.dumps({"single": results, "sharded": shard_figures, "global_rules": reasons,
                                         "args": {name: getattr(args, name) for name in RUN_ARGS}}, indent=1))
    if args.record:
        write_section(stack.ROOT / "docs" / "benchmarks.md", SECTION, "## Measured limits of one node (scaling)\n\n" + text)


if __name__ == "__main__":
    main()
