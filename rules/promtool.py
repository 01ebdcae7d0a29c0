"""Running the real `promtool` on generated rules: `check rules` and `test rules`.

The rules are generated into a private temporary directory together with copies of the unit-test
files, whose `rule_files` name the generated file by its bare name (`vigil-rules.yml`).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import yaml

from vigil.common.durations import parse_prometheus_duration

from .dump import dump_yaml
from .generate import prometheus_rule_file
from .model import RuleSet

RULE_FILE_NAME = "vigil-rules.yml"


class PromtoolMissing(RuntimeError):
    """promtool is not installed (or not where VIGIL_PROMTOOL points)."""


@dataclass(frozen=True)
class PromtoolResult:
    ok: bool
    output: str  # stdout and stderr together


def find_promtool() -> str:
    """`$VIGIL_PROMTOOL` or `promtool` on PATH; PromtoolMissing with an install hint otherwise."""
    configured = os.environ.get("VIGIL_PROMTOOL")
    found = shutil.which(configured or "promtool")
    if not found:
        where = f"VIGIL_PROMTOOL={configured!r}" if configured else "promtool on PATH"
        raise PromtoolMissing(f"cannot find {where}; install it (Debian: apt-get install prometheus) "
                              "or set VIGIL_PROMTOOL to its path")
    return found


def _run(args: list[str], cwd: Path, timeout: float) -> PromtoolResult:
    proc = subprocess.run([find_promtool(), *args], cwd=cwd, capture_output=True, text=True, timeout=timeout)
    return PromtoolResult(ok=proc.returncode == 0, output=(proc.stdout + proc.stderr).strip())


def check_rules(ruleset: RuleSet, *, max_for_seconds: float | None = None, timeout: float = 60) -> PromtoolResult:
    """`promtool check rules` on the rule file generated from `ruleset`."""
    with tempfile.TemporaryDirectory(prefix="vigil-rules-") as tmp:
        (Path(tmp) / RULE_FILE_NAME).write_text(
            dump_yaml(prometheus_rule_file(ruleset, max_for_seconds=max_for_seconds)), encoding="utf-8")
        return _run(["check", "rules", RULE_FILE_NAME], Path(tmp), timeout)


def evaluation_steps(path: Path) -> int:
    """About how many rule evaluations promtool runs for a test file: each test group evaluates every rule
    at each `evaluation_interval` up to its last `eval_time`, so this, not the file's size, is its cost
    (a short file of 3-hour tests costs more than a long one of 20-minute tests). 1 for a file that does
    not read as a test file: promtool will say what is wrong with it."""
    try:
        document = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
        step = parse_prometheus_duration(document.get("evaluation_interval", "1m"))
        total = 0
        for group in document.get("tests") or []:
            times = [parse_prometheus_duration(case["eval_time"])
                     for key in ("alert_rule_test", "promql_expr_test") for case in group.get(key) or []]
            total += int(max(times, default=0) // step) + 1
        return max(1, total)
    except (OSError, yaml.YAMLError, AttributeError, KeyError, TypeError, ValueError, ZeroDivisionError):
        return 1


def _share_out(names: list[str], costs: list[int], workers: int) -> list[list[str]]:
    """`names` in `workers` batches of about equal total cost (costliest first onto the lightest batch)."""
    count = max(1, min(workers, len(names)))
    totals, batches = [0] * count, [[] for _ in range(count)]
    for cost, name in sorted(zip(costs, names), reverse=True):
        lightest = totals.index(min(totals))
        totals[lightest] += cost
        batches[lightest].append(name)
    return [sorted(batch) for batch in batches if batch]


def test_rules(ruleset: RuleSet, test_files: list[Path], *, timeout: float = 300,
               workers: int | None = None) -> PromtoolResult:
    """`promtool test rules` on copies of `test_files` next to the rule file generated from `ruleset`.

    promtool runs the files of one call one after another on one core; the files are shared out over
    `workers` promtool processes (default: one per CPU) that run at once, by their `evaluation_steps`, and
    their outputs joined. `timeout` bounds each process (the shipped tests take about a minute of CPU).

    The rule file tested leaves out the `symptom_of` and `job` annotations: they are data for the notifier, not
    text a person reads, and the golden copy of the generated file checks them (a test's
    `exp_annotations` lists the summary, description and runbook only).
    """
    with tempfile.TemporaryDirectory(prefix="vigil-rules-test-") as tmp:
        doc = prometheus_rule_file(ruleset, symptoms=False)
        (Path(tmp) / RULE_FILE_NAME).write_text(dump_yaml(doc), encoding="utf-8")
        names, costs = [], []
        for i, path in enumerate(test_files):
            name = f"{i:02d}-{Path(path).name}"  # two test files may share a base name
            shutil.copyfile(path, Path(tmp) / name)
            names.append(name)
            costs.append(evaluation_steps(path))
        batches = _share_out(names, costs, workers or os.cpu_count() or 1)
        if len(batches) <= 1:
            return _run(["test", "rules", *names], Path(tmp), timeout)
        with ThreadPoolExecutor(len(batches)) as pool:
            results = list(pool.map(lambda batch: _run(["test", "rules", *batch], Path(tmp), timeout), batches))
        return PromtoolResult(ok=all(r.ok for r in results), output="\n".join(r.output for r in results if r.output))


test_rules.__test__ = False  # not a pytest test, despite its name
