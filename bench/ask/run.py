"""Execution accuracy of `vigil ask` (offline, no language model) on the held-out question set.

    .venv/bin/python bench/ask/run.py [--run-dir DIR | --prometheus URL] [--category gpu] [--verbose] [--record]

Each question of bench/ask/eval_questions.yaml is answered offline; its query and the gold query run
against the same Prometheus at the same instant and their results are compared under the rule of
`vigil.aiops.ask.judge` (docs/ask.md). Without --run-dir/--prometheus a demo stack is started
(`vigil up --detach`: 3 simulated nodes x 4 GPUs, 2 jobs, node health, AIOps with 1 day of backfilled
history) and stopped afterwards. Writes section `ask` of docs/benchmarks.md only with --record.
"""

from __future__ import annotations

import argparse
import collections
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
from vigil.aiops.ask.judge import judge_one, load_questions  # noqa: E402
from vigil.aiops.ask.knowledge import load_knowledge  # noqa: E402
from vigil.aiops.benchmark_record import add_record_option, machine_summary, utc_now, write_section  # noqa: E402
from vigil.common.ports import free_port_base  # noqa: E402
from vigil.common.prometheus_api import PrometheusClient  # noqa: E402
from vigil.stack.runstate import read_state  # noqa: E402

QUESTIONS = Path(__file__).with_name("eval_questions.yaml")
VIGIL = str(Path(sys.executable).with_name("vigil"))
DEMO_STACK = {"stack": {"scrape_interval": 1, "evaluation_interval": 1, "exporter_interval": 0.5, "sim_nodes": 3,
                        "sim_gpus": 4, "sim_jobs": 2, "aiops": True, "backfill_days": 1, "node_health": True}}
GOAL = 0.77


def start_demo(tmp: Path) -> Path:
    config = tmp / "vigil.yaml"
    config.write_text(yaml.safe_dump(DEMO_STACK))
    run_dir = tmp / "run"
    subprocess.run([VIGIL, "up", "--detach", "--config", str(config), "--run-dir", str(run_dir), "--gpu-backend", "sim",
                    "--port-base", str(free_port_base())], check=True, timeout=600, stdout=subprocess.DEVNULL)
    return run_dir


def wait_for_data(client: PrometheusClient, timeout: float = 120) -> None:
    """Until every component's series are in (the GPU fleet, node health, notifier, AIOps risk)."""
    deadline = time.time() + timeout
    wanted = ("vigil_gpu_temperature_celsius", "vigil_failure_risk", "vigil_notifier_incidents_firing", "node_load1")
    while time.time() < deadline:
        if all(client.query(name) for name in wanted):
            return
        time.sleep(1)
    raise SystemExit(f"the stack's Prometheus did not get {', '.join(wanted)} within {timeout:.0f} s")


def report(outcomes, verbose: bool) -> tuple[str, float]:
    by_category: dict[str, list[bool]] = collections.defaultdict(list)
    for outcome in outcomes:
        by_category[outcome.category].append(outcome.correct)
        if verbose and not outcome.correct:
            print(f"WRONG [{outcome.category}] {outcome.question}\n  gold: {outcome.gold}\n  got:  {outcome.predicted}"
                  f"\n  why:  {outcome.why}")
    accuracy = sum(o.correct for o in outcomes) / len(outcomes)
    refused = sum(o.predicted is None for o in outcomes)
    lines = ["| questions | count | execution accuracy |", "|---|---|---|"]
    for category, marks in sorted(by_category.items()):
        lines.append(f"| {category} | {len(marks)} | {sum(marks) / len(marks):.1%} |")
    for split in sorted({o.split for o in outcomes}):
        marks = [o.correct for o in outcomes if o.split == split]
        lines.append(f"| split: {split} | {len(marks)} | {sum(marks) / len(marks):.1%} |")
    empty = sum(o.gold_series == 0 for o in outcomes)
    lines.append(f"| **all** | {len(outcomes)} | **{accuracy:.1%}** (refused: {refused}; goal > {GOAL:.0%}) |")
    answered = [o.correct for o in outcomes if o.gold_series != 0]
    lines.append(f"| gold result not empty | {len(answered)} | {sum(answered) / max(len(answered), 1):.1%} |")
    lines.append(f"\nGold queries with an empty result on this stack (nothing down, no pending alert, ...): {empty}; "
                 "those are judged by the metrics both queries read.")
    return "\n".join(lines), accuracy


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run-dir", type=Path, help="a running stack (vigil up --detach) to query")
    parser.add_argument("--prometheus", metavar="URL", help="a Prometheus of vigil's stack to query")
    parser.add_argument("--category", help="only the questions of this category")
    parser.add_argument("--split", choices=("dev", "blind"), help="only the questions of this split")
    parser.add_argument("--verbose", action="store_true", help="print every wrong answer")
    add_record_option(parser)
    args = parser.parse_args()
    questions = [q for q in load_questions(QUESTIONS) if (not args.category or q["category"] == args.category)
                 and (not args.split or q["split"] == args.split)]
    with tempfile.TemporaryDirectory(prefix="vigil-ask-bench-") as tmp:
        run_dir = args.run_dir
        started = None
        if not args.prometheus and run_dir is None:
            run_dir = started = start_demo(Path(tmp))
        try:
            url = args.prometheus or read_state(run_dir).components["prometheus"].url
            client = PrometheusClient(url, timeout=30)
            wait_for_data(client)
            knowledge = load_knowledge()
            at = time.time()
            began = time.perf_counter()
            outcomes = [judge_one(q, client, at, knowledge) for q in questions]
            seconds = time.perf_counter() - began
        finally:
            if started is not None:
                subprocess.run([VIGIL, "down", "--run-dir", str(started)], timeout=120, stdout=subprocess.DEVNULL)
    table, accuracy = report(outcomes, args.verbose)
    text = (f"`vigil ask` offline (no language model), {len(outcomes)} held-out questions judged by execution "
            f"against the demo stack's Prometheus ({utc_now()}, {machine_summary()}; "
            f"{seconds / len(outcomes) * 1000:.0f} ms a question, both queries included).\n\n"
            f"Command: `.venv/bin/python bench/ask/run.py`\n\n{table}\n")
    print(text)
    if args.record:
        write_section(REPO / "docs" / "benchmarks.md", "ask", "## Text2PromQL (`vigil ask`)\n\n" + text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
