"""Running the real `promtool` on generated rules: `check rules` and `test rules`.

The rules are generated into a private temporary directory together with copies of the unit-test
files, whose `rule_files` name the generated file by its bare name (`vigil-rules.yml`).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
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


def test_rules(ruleset: RuleSet, test_files: list[Path], *, timeout: float = 120) -> PromtoolResult:
    """`promtool test rules` on copies of `test_files` next to the rule file generated from `ruleset`."""
    with tempfile.TemporaryDirectory(prefix="vigil-rules-test-") as tmp:
        (Path(tmp) / RULE_FILE_NAME).write_text(dump_yaml(prometheus_rule_file(ruleset)), encoding="utf-8")
        names = []
        for i, path in enumerate(test_files):
            name = f"{i:02d}-{Path(path).name}"  # two test files may share a base name
            shutil.copyfile(path, Path(tmp) / name)
            names.append(name)
        return _run(["test", "rules", *names], Path(tmp), timeout)


test_rules.__test__ = False  # not a pytest test, despite its name
