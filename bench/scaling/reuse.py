"""The rule benchmark's parts this bench builds on: `bench/rules/run.py` (watching rule-group evaluations,
Prometheus' own metrics) and the `bench/rules/stack.py` it imports (the simulated fleet, the real
Prometheus, free ports, waits). Loaded from its file: both benches have a `run.py`."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

RULES_BENCH = Path(__file__).resolve().parents[1] / "rules" / "run.py"
_spec = importlib.util.spec_from_file_location("bench_rules_run", RULES_BENCH)
rules_run = sys.modules[_spec.name] = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(rules_run)  # it puts bench/rules on sys.path and imports its stack.py
stack = rules_run.stack
