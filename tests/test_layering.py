"""Dependencies point one way: `vigil/` (CLI, settings, stack) on top, the domain packages below, and
`vigil.common` a leaf that anyone may use. Checked on the source with an AST scan of every import."""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest

REPO = Path(__file__).parent.parent
DOMAIN_FOLDERS = ("exporters", "rules", "notifier", "oncall", "aiops", "dashboards", "deploy")  # each is vigil.<folder>
DOMAIN_PACKAGES = tuple(f"vigil.{folder}" for folder in DOMAIN_FOLDERS)


def module_name(path: Path) -> str:
    """The import name of a source file: `rules/kinds.py` is `vigil.rules.kinds`, `vigil/cli/__init__.py` is `vigil.cli`."""
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts) if parts[0] == "vigil" else ".".join(["vigil", *parts])


def imported_modules(path: Path) -> list[tuple[int, str]]:
    """(line, absolute module name) of every import in the file, relative ones resolved."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                target = f"{base}.{node.module}" if node.module else base
            else:
                target = node.module
            # `from vigil import rules` imports the module vigil.rules
            found += [(node.lineno, f"{target}.{alias.name}" if target == "vigil" else target) for alias in node.names]
    return found


def vigil_imports(folder: str) -> list[tuple[str, int, str]]:
    return [(str(path.relative_to(REPO)), line, module)
            for path in sorted((REPO / folder).rglob("*.py"))
            for line, module in imported_modules(path)
            if module == "vigil" or module.startswith("vigil.")]


def within(module: str, packages: tuple[str, ...]) -> bool:
    return any(module == package or module.startswith(package + ".") for package in packages)


def test_vigil_common_imports_nothing_else_from_vigil():
    wrong = [item for item in vigil_imports("vigil/common") if not within(item[2], ("vigil.common",))]
    assert wrong == [], "vigil.common must stay a leaf: " + "; ".join(f"{f}:{line} imports {m}" for f, line, m in wrong)


@pytest.mark.parametrize("folder", DOMAIN_FOLDERS)
def test_domain_packages_import_only_the_common_helpers_and_each_other(folder):
    allowed = ("vigil.common", *DOMAIN_PACKAGES)
    wrong = [item for item in vigil_imports(folder) if not within(item[2], allowed)]
    assert wrong == [], ("domain packages never import vigil's CLI/stack layer: "
                         + "; ".join(f"{f}:{line} imports {m}" for f, line, m in wrong))


def test_the_stack_never_imports_the_cli():
    """vigil/ is layered too: the CLI (`vigil/cli/`) on top, the stack (`vigil/stack/`) below it."""
    wrong = [item for item in vigil_imports("vigil/stack") if within(item[2], ("vigil.cli",))]
    assert wrong == [], "; ".join(f"{f}:{line} imports {m}" for f, line, m in wrong)


def test_the_scan_sees_relative_and_top_layer_imports(tmp_path):
    """The checks above can fail: the scan resolves the import forms a violation would use."""
    assert module_name(REPO / "rules" / "kinds.py") == "vigil.rules.kinds"
    assert module_name(REPO / "vigil" / "common" / "__init__.py") == "vigil.common"
    kinds = dict((module, line) for line, module in imported_modules(REPO / "rules" / "kinds.py"))
    assert "vigil.rules.reader" in kinds  # `from .reader import Reader`
    drill = [module for _, module in imported_modules(REPO / "vigil" / "stack" / "drill.py")]
    assert "vigil.stack.client" in drill and "vigil.rules" in drill  # `from vigil.stack.client …`, `import vigil.rules`
    assert not within("vigil.stack.config", ("vigil.common", *DOMAIN_PACKAGES))
    assert not within("vigil.commonplace", ("vigil.common",))


# --- import cycles -------------------------------------------------------------------------------------
CODE_FOLDERS = ("vigil", *DOMAIN_FOLDERS)


def source_modules() -> dict[str, Path]:
    return {module_name(path): path for folder in CODE_FOLDERS for path in sorted((REPO / folder).rglob("*.py"))}


def module_imports(path: Path, known: dict[str, Path]) -> set[str]:
    """The vigil modules `path` imports anywhere in it (inside functions too: a deferred import is still a
    dependency), each as the module itself: `from . import charts` is `….charts`, `from x import Name`
    is `x`."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{parent}.{base}" if base else parent
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base for alias in node.names]
        else:
            continue
        for target in targets:
            while target and target not in known:  # `import vigil.rules.model.Alert` forms: the module part
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            child = next(edges, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    cycles.append(sorted(component))
    return cycles


@functools.cache
def vigil_graph() -> dict[str, set[str]]:
    known = source_modules()
    return {name: module_imports(path, known) for name, path in known.items()}


def test_no_module_imports_itself_back():
    """No import cycle among vigil's modules, deferred imports included."""
    cycles = import_cycles(vigil_graph())
    assert cycles == [], "import cycles: " + "; ".join(" ↔ ".join(c) for c in cycles)


def top_package(module: str) -> str:
    """`vigil.rules.model` → `vigil.rules`; a module of vigil/ itself (the CLI and stack layer) → `vigil`."""
    parts = module.split(".")
    return ".".join(parts[:2]) if len(parts) > 1 and parts[1] in DOMAIN_FOLDERS + ("common",) else "vigil"


def test_no_two_packages_import_each_other():
    """Between the top packages (the domain packages, vigil.common and the CLI/stack layer), dependencies
    point one way: `vigil.rules` and `vigil.aiops` may not both import the other."""
    edges: dict[tuple[str, str], tuple[str, str]] = {}
    for module, targets in vigil_graph().items():
        for target in targets:
            if top_package(module) != top_package(target):
                edges.setdefault((top_package(module), top_package(target)), (module, target))
    both = sorted(f"{a} ↔ {b} ({edges[a, b][0]} → {edges[a, b][1]}; {edges[b, a][0]} → {edges[b, a][1]})"
                  for a, b in edges if a < b and (b, a) in edges)
    assert both == [], "packages that import each other: " + "; ".join(both)


def test_the_cycle_check_finds_a_cycle_and_resolves_module_imports(tmp_path):
    """The checks above can fail: a two-module loop is found, and `from . import x` names the module x."""
    assert import_cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert import_cycles({"a": {"b"}, "b": set()}) == []
    known = source_modules()
    render = module_imports(REPO / "notifier" / "postmortem" / "render.py", known)
    assert {"vigil.notifier.postmortem.charts", "vigil.notifier.postmortem.evidence"} <= render
    assert "vigil.notifier.postmortem" not in render
    assert top_package("vigil.rules.model") == "vigil.rules" and top_package("vigil.cli.rules") == "vigil"


# --- the notifier's own packages -----------------------------------------------------------------------
NOTIFIER = REPO / "notifier"


def notifier_part(module: str) -> str | None:
    """The part of the notifier `module` belongs to: its sub-package (`api`, `engine`, `delivery`, …) or,
    for a module directly in notifier/, the module itself (`app`, `read_models`, …); None outside it."""
    parts = module.split(".")
    if parts[:2] != ["vigil", "notifier"] or len(parts) < 3:
        return None
    return parts[2] if (NOTIFIER / parts[2]).is_dir() else f"{parts[2]}.py"


def notifier_graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for module, targets in vigil_graph().items():
        part = notifier_part(module)
        if part is not None:
            graph.setdefault(part, set()).update(t for t in map(notifier_part, targets) if t not in (None, part))
    return graph


def notifier_imports(package: str) -> list[tuple[str, str]]:
    """(module, imported module) for every notifier module that `notifier/<package>/` imports."""
    return [(module, target) for module, targets in vigil_graph().items() if notifier_part(module) == package
            for target in sorted(targets) if notifier_part(target) is not None]


def test_the_notifiers_packages_import_each_other_one_way():
    """Inside the notifier too (api, console, engine, delivery, store, …): no two parts import each other,
    directly or round a loop."""
    cycles = import_cycles(notifier_graph())
    assert cycles == [], "notifier parts in a loop: " + "; ".join(" ↔ ".join(c) for c in cycles)


def test_delivery_never_imports_the_engine():
    """The engine decides who is paged and enqueues; delivery sends what is in the outbox."""
    wrong = [f"{m} → {t}" for m, t in notifier_imports("delivery") if notifier_part(t) == "engine"]
    assert wrong == []


def test_the_notifiers_core_imports_nothing_else_of_the_notifier():
    """`notifier/core/` holds pure types and decisions: every other part may use it, it uses none."""
    wrong = [f"{m} → {t}" for m, t in notifier_imports("core") if notifier_part(t) != "core"]
    assert wrong == []


def test_what_comes_in_never_imports_the_api_routes_or_the_engine():
    """The webhook's path (`ingest/`) stores and hands over; the API's routes and the engine sit beside it."""
    wrong = [f"{m} → {t}" for m, t in notifier_imports("ingest") if notifier_part(t) in ("api", "engine", "console")]
    assert wrong == []


def route_modules() -> set[str]:
    """The modules that define routes (`router = APIRouter(…)`): the API's and the webhook's."""
    return {module_name(path) for part in ("api", "ingest") for path in (NOTIFIER / part).glob("*.py")
            if "APIRouter(" in path.read_text()}


def test_the_console_never_imports_api_routes():
    """What both show comes from `read_models.py`; the console renders it, it never calls a route module."""
    routes = route_modules()
    assert {"vigil.notifier.api.incidents", "vigil.notifier.ingest.webhook"} <= routes
    wrong = [f"{m} → {t}" for m, t in notifier_imports("console") if t in routes]
    assert wrong == []
