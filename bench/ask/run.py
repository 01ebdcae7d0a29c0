"""Execution accuracy of `vigil ask` (offline, no language model) on a held-out question set.

    .venv/bin/python bench/ask/run.py [--set eval|outside] [--run-dir DIR | --prometheus URL] [--category gpu]
                                      [--verbose] [--record]

`--set eval` (the default): bench/ask/eval_questions.yaml, the project's own questions (splits dev and
blind). `--set outside`: bench/ask/outside_questions.yaml, questions phrased as SREs outside the project
phrase them (docs/ask.md "Questions written outside"), never tuned on. Each question is answered offline; its query and the gold query run
against the same Prometheus at the same instant and their results are compared under the rule of
`vigil.aiops.ask.judge` (docs/ask.md). Without --run-dir/--prometheus a demo stack is started
(`vigil up --detach`: 3 simulated nodes x 4 GPUs, 2 jobs, node health, AIOps with 1 day of backfilled
history) and stopped afterwards. Writes its set's part of section `ask` of docs/benchmarks.md only with
--record (the other set's part is kept).
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
from vigil.aiops.benchmark_record import (add_record_option, machine_summary, read_section, utc_now,  # noqa: E402
                                          write_section)
from vigil.common.ports import free_port_base  # noqa: E402
from vigil.common.prometheus_api import PrometheusClient  # noqa: E402
from vigil.stack.runstate import NoStack, read_state  # noqa: E402

SETS = {"eval": Path(__file__).with_name("eval_questions.yaml"),
        "outside": Path(__file__).with_name("outside_questions.yaml")}
SET_TITLES = {"eval": "### The project's held-out questions (`--set eval`)",
              "outside": "### Questions written outside the project (`--set outside`)"}
VIGIL = str(Path(sys.executable).with_name("vigil"))
DEMO_STACK = {"stack": {"scrape_interval": 1, "evaluation_interval": 1, "exporter_interval": 0.5, "sim_nodes": 3,
                        "sim_gpus": 4, "sim_jobs": 2, "aiops": True, "backfill_days": 1, "node_health": True}}
GOALS = {"eval": 0.77, "outside": 0.85}


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


def report(outcomes, verbose: bool, goal: float) -> tuple[str, float]:
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
    for split in sorted({o.split for o in outcomes if o.split}):
        marks = [o.correct for o in outcomes if o.split == split]
        lines.append(f"| split: {split} | {len(marks)} | {sum(marks) / len(marks):.1%} |")
    empty = sum(o.gold_series == 0 for o in outcomes)
    asked = sum(o.asked_back for o in outcomes)
    lines.append(f"| **all** | {len(outcomes)} | **{accuracy:.1%}** (refused: {refused}; asked back: {asked}; "
                 f"goal > {goal:.0%}) |")
    answered = [o.correct for o in outcomes if o.gold_series != 0]
    lines.append(f"| gold result not empty | {len(answered)} | {sum(answered) / max(len(answered), 1):.1%} |")
    lines.append(f"\nGold queries with an empty result on this stack (nothing down, no pending alert, ...): {empty}; "
                 "those are judged by the metrics both queries read.")
    return "\n".join(lines), accuracy


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", dest="question_set", choices=sorted(SETS), default="eval",
                        help="eval: the project's held-out questions; outside: questions written outside it")
    parser.add_argument("--run-dir", type=Path, help="a running stack (vigil up --detach) to query")
    parser.add_argument("--prometheus", metavar="URL", help="a Prometheus of vigil's stack to query")
    parser.add_argument("--category", help="only the questions of this category")
    parser.add_argument("--split", choices=("dev", "blind"), help="only the questions of this split")
    parser.add_argument("--verbose", action="store_true", help="print every wrong answer")
    add_record_option(parser)
    args = parser.parse_args()
    if args.split and args.question_set != "eval":
        parser.error("--split applies to --set eval only")
    questions = [q for q in load_questions(SETS[args.question_set])
                 if (not args.category or q["category"] == args.category) and (not args.split or q["split"] == args.split)]
    with tempfile.TemporaryDirectory(prefix="vigil-ask-bench-") as tmp:
        run_dir = args.run_dir
        started = None
        if not args.prometheus and run_dir is None:
            run_dir = started = start_demo(Path(tmp))
        try:
            try:
                url = args.prometheus or read_state(run_dir).components["prometheus"].url
            except NoStack as exc:  # a --run-dir whose stack is down: say so, no traceback
                raise SystemExit(f"bench/ask/run.py: {exc}") from None
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
    table, accuracy = report(outcomes, args.verbose, GOALS[args.question_set])
    flag = "" if args.question_set == "eval" else f" --set {args.question_set}"
    text = (f"`vigil ask` offline (no language model), {len(outcomes)} questions "
            f"({SETS[args.question_set].relative_to(REPO)}) judged by execution "
            f"against the demo stack's Prometheus ({utc_now()}, {machine_summary()}; "
            f"{seconds / len(outcomes) * 1000:.0f} ms a question, both queries included).\n\n"
            f"Command: `.venv/bin/python bench/ask/run.py{flag}`\n\n{table}\n")
    print(text)
    if args.record:
        path = REPO / "docs" / "benchmarks.md"
        write_section(path, "ask", ask_section(read_section(path, "ask"), args.question_set, text))
    return 0


def ask_section(existing: str | None, question_set: str, text: str) -> str:
    """Section `ask` with this set's part replaced by `text` and the other set's part kept as it was (a
    section written before the parts existed is the eval set's)."""
    parts = {name: "" for name in SETS}
    body = (existing or "").split("\n", 1)[1] if (existing or "").startswith("## ") else (existing or "")
    titled = [name for name in SETS if SET_TITLES[name] in body]
    if not titled and body.strip():
        parts["eval"] = body.strip()
    for name in titled:
        start = body.index(SET_TITLES[name]) + len(SET_TITLES[name])
        ends = [body.index(SET_TITLES[other]) for other in titled if body.index(SET_TITLES[other]) > start]
        parts[name] = body[start:min(ends, default=len(body))].strip()
    parts[question_set] = text.strip()
    blocks = [f"{SET_TITLES[name]}\n\n{parts[name]}" for name in SETS if parts[name]]
    return "## Text2PromQL (`vigil ask`)\n\n" + "\n\n".join(blocks) + "\n"


if __name__ == "__main__":
    sys.exit(main())
