"""The distribution installs one top-level package, `vigil`, with every sub-package and data file."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from stack_support import shadowing_workdir

REPO = Path(__file__).resolve().parents[1]
FOLDERS = ("vigil", "exporters", "rules", "aiops", "notifier", "oncall", "dashboards")
DATA_FOLDERS = ("rules/specs", "rules/tests", "notifier/console/templates", "notifier/console/static",
                "notifier/postmortem/templates", "dashboards/json", "dashboards/provisioning", "deploy/systemd/units",
                "oncall/examples")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    # build from a copy of the source files (tracked, or new and not ignored): an in-tree build would
    # leave build/ behind, and setuptools packs stale files it finds there
    source = tmp_path_factory.mktemp("source")
    listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=REPO,
                            capture_output=True, text=True, check=True).stdout.splitlines()
    for name in listed:
        if (REPO / name).is_file():
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, source / name)
    out = tmp_path_factory.mktemp("wheel")
    result = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", str(out), str(source)],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    # a data folder setuptools would install only as a deprecated case ("absent from the `packages`
    # configuration": future setuptools may leave its files out)
    assert "absent from the `packages` configuration" not in result.stderr, result.stderr[-3000:]
    return next(out.glob("vigil-*.whl"))


def test_the_wheel_holds_vigil_and_nothing_else_at_the_top(wheel: Path):
    names = zipfile.ZipFile(wheel).namelist()
    top = {name.split("/")[0] for name in names}
    assert {name for name in top if not name.endswith(".dist-info")} == {"vigil"}, top


def test_every_package_folder_and_data_file_ships(wheel: Path):
    names = set(zipfile.ZipFile(wheel).namelist())
    for folder in FOLDERS:
        for init in (REPO / folder).rglob("__init__.py"):
            relative = init.relative_to(REPO / folder)
            inside = "vigil/" + ("" if folder == "vigil" else folder + "/") + relative.as_posix()
            assert inside in names, f"{init.relative_to(REPO)} is not in the wheel"
    shipped_specs = {n for n in names if n.startswith("vigil/rules/specs/")}
    assert shipped_specs == {f"vigil/rules/specs/{p.name}" for p in (REPO / "rules" / "specs").glob("*.yaml")}
    for folder in DATA_FOLDERS:  # every file of the data folders the code reads
        for name in subprocess.run(["git", "ls-files", folder], cwd=REPO, capture_output=True, text=True,
                                   check=True).stdout.splitlines():  # tracked files: no stray local ones
            path = REPO / name
            if path.is_file():
                assert f"vigil/{path.relative_to(REPO).as_posix()}" in names, f"{path.relative_to(REPO)} is not in the wheel"
    assert "vigil/aiops/detect/thresholds.json" in names


def test_installed_wheel_works_from_a_directory_with_shadowing_folders(wheel: Path, tmp_path: Path):
    target = tmp_path / "site"
    install = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--quiet", "--target", str(target),
                              str(wheel)], capture_output=True, text=True, timeout=300)
    assert install.returncode == 0, install.stderr[-3000:]
    installed_top = {p.name for p in target.iterdir() if not p.name.endswith(".dist-info") and p.name != "bin"}
    assert installed_top == {"vigil"}
    workdir = shadowing_workdir(tmp_path / "rules-repo")
    # the dependencies come from this environment; vigil itself only from the installed wheel
    env = {"PYTHONPATH": str(target), "PATH": "/usr/bin:/bin"}
    result = subprocess.run([sys.executable, "-P", "-c", "from vigil.cli import main; main()", "rules", "generate"],
                            cwd=workdir, env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "GpuFallenOffBus" in result.stdout
    where = subprocess.run([sys.executable, "-P", "-c", "import vigil.rules; print(vigil.rules.__file__)"],
                           cwd=workdir, env=env, capture_output=True, text=True, timeout=60)
    assert where.stdout.strip().startswith(str(target)), where.stdout + where.stderr
