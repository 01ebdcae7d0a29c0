"""Each rule group's cost, two rule files side by side, by replaying every rule's expression as a query.

    .venv/bin/python bench/rules/replay.py --before OLD.yml [--after NEW.yml] [--nodes 1250] [--wait 480]
        [--rounds 24] [--baselines] [--json F]

`bench/rules/run.py` reads what Prometheus reports for its own evaluations: on shared cores a group
evaluated once a minute is seen two or three times, and one slow moment decides its figure. Here the
simulated fleet is scraped by the real Prometheus (evaluating NEW's rules, so every record either file
reads exists), and once the windows have filled (`--wait` seconds after every target is up: the
10- and 15-minute ranges read their full history, as in steady state) every rule of both files is run
as an instant query (`stats=all`, its `execTotalTime`), OLD's and NEW's in alternating order, `--rounds`
times. Each rule's median, summed per group, is printed in units of a plain one-series-a-GPU selector
(the median of the same four rules as run.py's unit, in both files): one evaluation of each group, and
the work a minute (a 15-second group counts four times). `--baselines` also records a band edge for
every GPU's utilization (`vigil_baseline_lower/upper`, as a trained AIOps service publishes), which the
bench fleet alone lacks. OLD is for instance `git show HEAD~3:tests/golden/rules/vigil-rules.yml`.
Prints figures only; writes no documentation.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import requests
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
import rules_report  # noqa: E402  (bench/rules/rules_report.py)
import stack  # noqa: E402  (bench/rules/stack.py)
from vigil.common.durations import parse_prometheus_duration  # noqa: E402

UNIT = tuple(rule.split("/", 1)[1] for rule in rules_report.UNIT_RULES)  # by name: a rule may change groups
SCRAPE_S = rules_report.SCRAPE_S
# a band edge for every GPU, as the AIOps service publishes once it has trained (labels: the source's + metric)
BASELINES = {"name": "bench-baselines", "rules": [
    {"record": f"vigil_baseline_{edge}",
     "expr": f'label_replace(0 * vigil_gpu_utilization_ratio + {value}, "metric", "vigil_gpu_utilization_ratio", "", "")'}
    for edge, value in (("lower", 0.1), ("upper", 0.9))]}


def rules(doc: dict) -> list[tuple[str, str, str]]:
    return [(g["name"], r.get("record") or r["alert"], r["expr"]) for g in doc["groups"] for r in g["rules"]]


def query_seconds(url: str, expr: str) -> float:
    body = requests.get(f"{url}/api/v1/query", params={"query": expr, "stats": "all"}, timeout=120).json()
    if body.get("status") != "success":
        raise SystemExit(f"query failed: {expr}: {body.get('error')}")
    return body["data"]["stats"]["timings"]["execTotalTime"]


def summary(times: dict, intervals: dict[str, float]) -> tuple[dict, str]:
    """Per side: each group's units an evaluation and the work a minute, in one unit for both sides."""
    medians = {side: {key: statistics.median(v) for key, v in by.items()} for side, by in times.items()}
    unit = statistics.median([m for by in medians.values() for (_, rule), m in by.items() if rule in UNIT])
    report: dict = {"unit_ms": 1000 * unit}
    lines = [f"unit {1000 * unit:.0f} ms (median of the plain per-GPU selectors {', '.join(UNIT)} of both files)"]
    for side, by in medians.items():
        units = {f"{g}/{r}": m / unit for (g, r), m in by.items()}
        groups, minute = rules_report.group_work(units, intervals)
        report[side] = {"groups": groups, "per_minute": minute, "rules": units}
        lines.append(f"{side}: {minute:.1f} units a minute; largest group {max(groups.values()):.2f}; an evaluation: "
                     + ", ".join(f"{g} {u:.1f}" for g, u in sorted(groups.items())))
    return report, "\n".join(lines)


def interval_s(group: dict) -> float:
    """A group's evaluation interval in seconds (the global one, the scrape interval here, when it has none)."""
    return parse_prometheus_duration(group["interval"]) if "interval" in group else SCRAPE_S


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", type=Path, required=True, help="rule file to compare (e.g. an older golden)")
    parser.add_argument("--after", type=Path, help="rule file (default: `vigil rules generate` now)")
    parser.add_argument("--nodes", type=int, default=1250)
    parser.add_argument("--wait", type=int, default=480, help="seconds after every target is up before measuring")
    parser.add_argument("--rounds", type=int, default=24)
    parser.add_argument("--baselines", action="store_true", help="publish a baseline band for every GPU")
    parser.add_argument("--json", type=Path, help="also write every figure (each rule's units) to this file")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="vigil-bench-replay-") as tmp:
        work = Path(tmp)
        after = args.after or stack.generate_rules(work / "rules")
        docs = {"before": yaml.safe_load(args.before.read_text()), "after": yaml.safe_load(after.read_text())}
        loaded = {"groups": docs["after"]["groups"] + ([BASELINES] if args.baselines else [])}
        (work / "prometheus-rules.yml").write_text(yaml.safe_dump(loaded, sort_keys=False))
        intervals = {g["name"]: interval_s(g) for doc in docs.values() for g in doc["groups"]}
        sides = {side: rules(doc) for side, doc in docs.items()}
        times: dict = {side: {} for side in sides}
        with stack.fleet(args.nodes, 8, 120, work) as (_, fleet_port):
            prom_port = stack.free_port()
            config = stack.prometheus_config(fleet_port, args.nodes, work / "prometheus-rules.yml", prom_port, SCRAPE_S)
            with stack.prometheus(config, work) as (prom, url):
                up = f'count(up{{job="vigil-gpu"}} == 1) >= {args.nodes}'
                stack.wait_until(lambda: requests.get(f"{url}/api/v1/query", params={"query": up}, timeout=30)
                                 .json()["data"]["result"], 60 + args.nodes / 20, "every target up", step=2, process=prom)
                print(f"every target up; measuring in {args.wait} s", flush=True)
                time.sleep(args.wait)  # the 10- and 15-minute windows fill: steady state, not the first minutes
                for i in range(args.rounds):
                    for side in (("before", "after") if i % 2 == 0 else ("after", "before")):
                        for group, rule, expr in sides[side]:
                            times[side].setdefault((group, rule), []).append(query_seconds(url, expr))
                    print(f"round {i + 1}/{args.rounds}, load {Path('/proc/loadavg').read_text().split()[0]}", flush=True)
    report, text = summary(times, intervals)
    print(text)
    if args.json:
        args.json.write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
