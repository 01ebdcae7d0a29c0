"""vigil rules: Prometheus alert rules and Alertmanager inhibit rules generated from compact YAML specs.

Public API (used by the stack generator):

- `load_specs(paths)` → `RuleSet`; raises `SpecError` (`.errors`: every `file:line: message`)
- `default_spec_paths()` → the shipped specs under `rules/specs/`
- `prometheus_rule_file(ruleset, *, max_for_seconds=None)` → `{"groups": [...]}`
- `alertmanager_inhibit_rules(ruleset)` → Alertmanager `inhibit_rules` entries
- `dump_yaml(doc)` → deterministic YAML text

The spec format is documented in docs/rules.md.
"""

from __future__ import annotations

from pathlib import Path

from .dump import dump_yaml
from .generate import alertmanager_inhibit_rules, prometheus_rule_file
from .loader import load_specs
from .located import SpecError
from .model import Alert, Group, Inhibition, RuleSet
from .promtool import RULE_FILE_NAME

SPECS_DIR = Path(__file__).parent / "specs"
UNIT_TESTS_DIR = Path(__file__).parent / "tests"
INHIBIT_FILE_NAME = "alertmanager-inhibit-rules.yml"


def default_spec_paths() -> list[Path]:
    """The shipped rule specs, in a stable (sorted) order."""
    return sorted(SPECS_DIR.glob("*.yaml"))


def default_unit_test_paths() -> list[Path]:
    """The shipped `promtool test rules` files."""
    return sorted(UNIT_TESTS_DIR.glob("*.yaml"))


__all__ = [
    "Alert", "Group", "Inhibition", "RuleSet", "SpecError", "INHIBIT_FILE_NAME", "RULE_FILE_NAME",
    "alertmanager_inhibit_rules", "default_spec_paths", "default_unit_test_paths", "dump_yaml",
    "load_specs", "prometheus_rule_file",
]
