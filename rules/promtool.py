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


def _share_out(names: list[str], sizes: list[int], workers: int) -> list[list[str]]:
    """`names` in `workers` batches of about equal total size (largest first onto the lightest batch)."""
    count = max(1, min(workers, len(names)))
    totals, batches = [0] * count, [[] for _ in range(count)]
    for size, name in sorted(zip(sizes, names), reverse=True):
        lightest = totals.index(min(totals))
        totals[lightest] += size
        batches[lightest].append(name)
    return [sorted(batch) for batch in batches if batch]


def test_rules(ruleset: RuleSet, test_files: list[Path], *, timeout: float = 120,
               workers: int | None = None) -> PromtoolResult:
    """`promtool test rules` on copies of `test_files` next to the rule file generated from `ruleset`.

    promtool runs the files of one call one after another on one core; the files are shared out over
    `workers` promtool processes (default: one per CPU) that run at once, and their outputs joined.
    """
    with tempfile.TemporaryDirectory(prefix="vigil-rules-test-") as tmp:
        (Path(tmp) / RULE_FILE_NAME).write_text(dump_yaml(prometheus_rule_file(ruleset)), encoding="utf-8")
        names, sizes = [], []
        for i, path in enumerate(test_files):
            name = f"{i:02d}-{Path(path).name}"  # two test files may share a base name
            shutil.copyfile(path, Path(tmp) / name)
            names.append(name)
            sizes.append(Path(path).stat().st_size)
        batches = _share_out(names, sizes, workers or os.cpu_count() or 1)
        if len(batches) <= 1:
            return _run(["test", "rules", *names], Path(tmp), timeout)
        with ThreadPoolExecutor(len(batches)) as pool:
            results = list(pool.map(lambda batch: _run(["test", "rules", *batch], Path(tmp), timeout), batches))
        return PromtoolResult(ok=all(r.ok for r in results), output="\n".join(r.output for r in results if r.output))


test_rules.__test__ = False  # not a pytest test, despite its name
