"""Load a benchmark's or a development tool's module by its file: bench/ and tools/ are scripts, not
packages, so tests cannot import them."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

BENCH = Path(__file__).resolve().parents[1] / "bench"
TOOLS = BENCH.parent / "tools"


def load_tool(relative: str) -> ModuleType:
    """tools/<relative> (e.g. "metric_catalog.py") as module `tool_metric_catalog`, as load_bench does."""
    return load_script(TOOLS / relative, "tool_" + "_".join(Path(relative).with_suffix("").parts))


def load_bench(relative: str) -> ModuleType:
    """bench/<relative> (e.g. "rules/run.py") as module `bench_rules_run`. It is registered in sys.modules
    before it runs (dataclasses look their module up there), and it runs with its folder on sys.path, as
    when it is started as a script, so that it can import its siblings."""
    return load_script(BENCH / relative, "bench_" + "_".join(Path(relative).with_suffix("").parts))


def load_script(path: Path, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    module = sys.modules[name] = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(path.parent))
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(path.parent))
    return module
