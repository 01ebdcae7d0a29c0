"""Dependencies point one way: `vigil/` (CLI, settings, stack) on top, the domain packages below, and
`vigil.common` a leaf that anyone may use. Checked on the source with an AST scan of every import."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).parent.parent
DOMAIN_FOLDERS = ("exporters", "rules", "notifier", "oncall", "aiops", "dashboards", "deploy")  # each is vigil.<folder>
DOMAIN_PACKAGES = tuple(f"vigil.{folder}" for folder in DOMAIN_FOLDERS)


def module_name(path: Path) -> str:
    """The import name of a source file: `rules/kinds.py` is `vigil.rules.kinds`, `vigil/cli.py` is `vigil.cli`."""
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


def test_the_scan_sees_relative_and_top_layer_imports(tmp_path):
    """The checks above can fail: the scan resolves the import forms a violation would use."""
    assert module_name(REPO / "rules" / "kinds.py") == "vigil.rules.kinds"
    assert module_name(REPO / "vigil" / "common" / "__init__.py") == "vigil.common"
    kinds = dict((module, line) for line, module in imported_modules(REPO / "rules" / "kinds.py"))
    assert "vigil.rules.reader" in kinds  # `from .reader import Reader`
    drill = [module for _, module in imported_modules(REPO / "vigil" / "drill.py")]
    assert "vigil.stack_client" in drill and "vigil.rules" in drill  # `from .stack_client …`, `import vigil.rules`
    assert not within("vigil.stack_config", ("vigil.common", *DOMAIN_PACKAGES))
    assert not within("vigil.commonplace", ("vigil.common",))
