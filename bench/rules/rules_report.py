"""The report of the rule benchmark (`run.py`): per-group figures, the costliest rules, the rule work in
units of a plain selector, and what a `--steady` history held."""

from __future__ import annotations

import argparse
import statistics

from vigil.aiops.benchmark_record import machine_summary, utc_now

SCRAPE_S = 15
STEADY_WARMUP_S = 31 * 60  # the longest window over live series, 30 minutes, and a minute's evaluations
TOP_RULES = 10
# plain selectors of one series a GPU (`metric > 0`), the unit of rule work on shared cores
UNIT_RULES = ("vigil-gpu-errors/GpuRowRemapFailure", "vigil-gpu-errors/GpuRemapPending",
              "vigil-gpu/GpuRecoveryActionRequired", "vigil-gpu/GpuUncorrectableEccErrors")


def non_default_options(args: argparse.Namespace) -> str:
    """The options a run was given beyond --nodes and --evaluations, so the recorded command repeats it."""
    given = [f" --gpus {args.gpus}" if args.gpus != 8 else "",
             f" --steady --steady-days {args.steady_days} --xid-rate {args.xid_rate}" if args.steady else "",
             f" --warmup {args.warmup}" if args.warmup != (STEADY_WARMUP_S if args.steady else 45) else "",
             f" --fleet-refresh {args.fleet_refresh}" if args.fleet_refresh != 120 else "",
             f" --rules-file {args.rules_file}" if args.rules_file else ""]
    return "".join(given)


def report(results: list[dict], args: argparse.Namespace) -> str:
    lines = [f"Machine: {machine_summary()}. Date: {utc_now()}. Command: `.venv/bin/python bench/rules/run.py "
             f"--nodes {args.nodes} --evaluations {args.evaluations}{non_default_options(args)}`. Load average at start: {args.load_at_start:.1f}. Fleet: N nodes x {args.gpus} GPUs in one process "
             f"(refresh every {args.fleet_refresh} s), scraped every {SCRAPE_S} s; rules of `vigil rules generate` "
             f"evaluated every {SCRAPE_S} s (a group with an `interval` of its own at that interval); "
             f"{args.evaluations} evaluations per 15-second group, from {args.warmup} s after every target is up. "
             "The cores are shared with other work (see the load average).", ""] + steady_lines(results, args)
    groups = sorted({g for r in results for g in r["groups"]})
    lines += ["*last / max*: the group's last and largest `prometheus_rule_group_last_duration_seconds` over the "
              "evaluations watched; *clear of GC*: the largest of those that overlapped no Go GC cycle of "
              "Prometheus (from its `GODEBUG=gctrace=1` log), and in brackets how many did overlap one.", ""]
    header = ["Group"] + [f"{r['nodes']} nodes last / max ms | clear of GC ms" for r in results]
    lines += ["| " + " | ".join(header) + " |", "|" + "---|" * (1 + 2 * len(results))]
    for g in groups:
        cells = [group_cells(r["groups"][g]) if g in r["groups"] else "- | -" for r in results]
        lines.append(f"| {g} | " + " | ".join(cells) + " |")
    lines += ["", "Prometheus' Go GC cycles in the window watched (start to mark termination, wall ms): "
              + "; ".join(f"{r['nodes']} nodes: {r.get('gc_cycles', 0)} ({', '.join(map(str, r.get('gc_mark_ms', []))) or 'none'})"
                          for r in results) + "."]
    lines += ["", "| Nodes | targets up (min, end) | head series | Prometheus CPU | Prometheus RSS | "
              "fleet threads | fleet CPU | fleet RSS | load avg (max 1 min) |", "|" + "---|" * 9]
    for r in results:
        lines.append(f"| {r['nodes']} | {r['targets_up_min']}, {r['targets_up_end']} | {r['head_series']:,.0f} | "
                     f"{r['prom_cpu']:.2f} cores | {r['prom_rss_mib']:,.0f} MiB | {r['fleet_threads']} | "
                     f"{r['fleet_cpu']:.2f} cores | {r['fleet_rss_mib']:,.0f} MiB | {r['load_max']:.1f} |")
    if len(results) > 1:
        lines += ["", "Growth (largest group evaluation, max ms; linear when the time ratio is close to the node ratio):", ""]
        for a, b in zip(results, results[1:]):
            for g in groups:
                if g in a["groups"] and g in b["groups"] and a["groups"][g]["max_ms"] > 0:
                    ratio = b["groups"][g]["max_ms"] / a["groups"][g]["max_ms"]
                    lines.append(f"- {g}: {a['nodes']} -> {b['nodes']} nodes (x{b['nodes'] / a['nodes']:.1f}): "
                                 f"time x{ratio:.1f}")
    return "\n".join(lines + rules_table(results) + work_summary(results))


def steady_lines(results: list[dict], args: argparse.Namespace) -> list[str]:
    """What the --steady history held at each size (bench/rules/steady.py)."""
    if not args.steady:
        return []
    held = "; ".join(f"{r['nodes']} nodes: {r['steady']['events']} XID events on {r['steady']['counters']} counters, "
                     f"{r['steady']['samples']:,} samples" for r in results)
    return [f"Steady state (`--steady`): before Prometheus started, {args.steady_days} days of hardware XIDs at "
            f"{args.xid_rate} per 1,000 GPU-days ({held}), the occasions record over them "
            "(`promtool tsdb create-blocks-from rules`) and the GPU-availability SLO's fleet records were written "
            "into its TSDB; the live fleet carried each XID counter on; every window over live series of 30 "
            "minutes or less was full when the watch began.", ""]


def group_cells(figures: dict) -> str:
    clear = figures.get("max_outside_gc_ms")
    return (f"{figures['last_ms']:.0f} / {figures['max_ms']:.0f} | "
            f"{'-' if clear is None else f'{clear:.0f}'} ({figures.get('during_gc', 0)})")


def rules_table(results: list[dict]) -> list[str]:
    """The costliest rules of each size by their median `/api/v1/rules` evaluationTime over the evaluations
    seen, with the largest, and the median's share of the costliest rule's: on shared cores one slow
    evaluation says little, and the ratios between rules say more than the seconds."""
    lines = ["", f"Costliest rules ({TOP_RULES} per size, by the median of the evaluationTime seen per evaluation "
             "in `/api/v1/rules`; share: of the first rule's median):", "",
             "| Nodes | rank | group / rule | median ms | max ms | evaluations | share |", "|---|---|---|---|---|---|---|"]
    for r in results:
        ranked = sorted(((statistics.median(ms), max(ms), len(ms), rule) for rule, ms in r["rules_ms"].items() if ms),
                        reverse=True)[:TOP_RULES]
        for rank, (median, largest, count, rule) in enumerate(ranked, 1):
            share = median / ranked[0][0] if ranked[0][0] else 0.0
            lines.append(f"| {r['nodes']} | {rank} | {rule} | {median:.0f} | {largest:.0f} | {count} | {share:.2f} |")
    return lines


def group_work(rules: dict[str, float], intervals: dict[str, float]) -> tuple[dict[str, float], float]:
    """({group: the sum of its rules' figures, an evaluation}, that work a minute) of figures keyed
    `group/rule`; a group not in `intervals` (seconds) is evaluated every scrape interval."""
    groups: dict[str, float] = {}
    for rule, figure in rules.items():
        group = rule.split("/", 1)[0]
        groups[group] = groups.get(group, 0.0) + figure
    return groups, sum(work * 60 / intervals.get(g, SCRAPE_S) for g, work in groups.items())


def work_summary(results: list[dict]) -> list[str]:
    """Each size's rule work a minute and each group's work an evaluation, in units of a plain selector of
    one series a GPU (the median of the `UNIT_RULES` present): on shared cores the seconds swing with the
    load, the ratios much less, so two runs (before and after a rule change) compare in units."""
    lines = ["", "Rule work (the sum of the rules' median evaluationTime; unit: the median of the plain per-GPU "
             f"selectors {', '.join(UNIT_RULES)}):", ""]
    for r in results:
        medians = {rule: statistics.median(ms) for rule, ms in r["rules_ms"].items() if ms}
        unit = statistics.median([medians[u] for u in UNIT_RULES if u in medians] or [float("nan")])
        groups, per_minute = group_work(medians, r.get("intervals_s", {}))
        lines.append(f"- {r['nodes']} nodes: unit {unit:.0f} ms; {per_minute / unit:.1f} units a minute; an evaluation: "
                     + ", ".join(f"{g} {ms / unit:.1f}" for g, ms in sorted(groups.items())))
    return lines
