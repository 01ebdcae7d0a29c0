"""The Dockerfile's install steps, run without a Docker engine: its wheel stage's commands build the
wheel from exactly the files its COPY lines send, its runtime stage's `pip install` installs that wheel
with the image's extras and pins into a fresh venv, and each image's ENTRYPOINT + CMD is then parsed by
the installed `vigil`, its EXPOSE ports are those commands' own defaults, and its HEALTHCHECK passes
against the command serving on loopback.

What is not the image: the venv is this machine's Python (the same version as the base, checked in
test_deploy_images.py), and the dependencies are not downloaded again: the fresh venv sees the tested
venv's installed distributions (vigil itself left out) through a .pth file and installs with
`--no-index`, so pip's resolver must find every pin of constraints.txt already satisfied there; only
the build tools the wheel stage pins are fetched, from the configured package index.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
import yaml
from packaging.utils import canonicalize_name

from deploy_images_support import COMMANDS, DOCKERFILE, IMAGES, REPO, stages
from exporters_nvml_support import free_ports, wait_until
from vigil.common.hostport import parse_host_port

PIP = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
SITE = Path(sysconfig.get_paths()["purelib"])


def _run(argv: list[str], **kwargs) -> subprocess.CompletedProcess:
    kwargs.setdefault("cwd", Path(argv[0]).parent)  # never the checkout, whose vigil/ would shadow the install
    done = subprocess.run(argv, capture_output=True, text=True, timeout=240, **kwargs)
    assert done.returncode == 0, f"{argv}:\n{done.stdout[-3000:]}{done.stderr[-3000:]}"
    return done


def _map(word: str, paths: dict[str, Path]) -> str:
    """Image paths in a command word (/wheels/x.whl, sqlite:////var/lib/vigil/n.db) as the test's paths."""
    for image_path, local in paths.items():
        word = re.sub(rf"{re.escape(image_path)}(?=/|$)", str(local), word)
    return word


def _canonical(pin: str) -> str:
    """'Name==1.0' with the name as pip compares it ('Foo_Bar' and 'foo-bar' are one distribution)."""
    name, version = pin.split("==")
    return f"{canonicalize_name(name)}=={version}"


def _pip(venv_python: Path, command: list[str], paths: dict[str, Path], extra: list[str], cwd: Path) -> None:
    assert command[0] == "pip", command
    _run([*PIP, "--python", str(venv_python), *[_map(w, paths) for w in command[1:]], *extra], cwd=cwd)


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """The fresh venv after the wheel and runtime stages' commands; returns its bin directory."""
    root = tmp_path_factory.mktemp("image")
    all_stages = stages()
    src, wheels = root / "src", root / "wheels"
    src.mkdir()
    # the wheel stage: its COPY lines into its WORKDIR, then its RUN commands (pip against the fresh venv)
    for value in all_stages["wheel"].values("COPY"):
        *sources, _target = value.split()
        for source in sources:
            origin = REPO / source
            copy = shutil.copytree if origin.is_dir() else shutil.copy
            copy(origin, src / source.rstrip("/"), **({"ignore": shutil.ignore_patterns("__pycache__")} if origin.is_dir() else {}))
    _run([sys.executable, "-m", "venv", "--without-pip", str(root / "venv")])
    python = root / "venv" / "bin" / "python"
    pinned = set()
    for command in all_stages["wheel"].commands():
        _pip(python, command, {"/wheels": wheels}, [], cwd=src)
        pinned |= {_canonical(word) for word in command[2:] if "==" in word}
    # the build stage is reproducible only if nothing it installs comes unpinned (wheel's packaging did)
    listed = _run([str(python), "-c", "import importlib.metadata as m; print(*(f\"{d.metadata['Name']}=={d.version}\" for d in m.distributions()))"]).stdout.split()
    assert {_canonical(word) for word in listed} == pinned, f"the wheel stage installed {listed}, pins {sorted(pinned)}"
    # what the runtime stage installs from: the tested venv's distributions, vigil's own left out
    deps = root / "deps"
    deps.mkdir()
    for entry in SITE.iterdir():
        if not entry.name.startswith(("vigil", "__editable__")) and entry.suffix != ".pth":
            (deps / entry.name).symlink_to(entry)
    venv_site = Path(_run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).stdout.strip())
    (venv_site / "tested-deps.pth").write_text(f"{deps}\n")
    runtime = all_stages["runtime"]
    for value in runtime.values("COPY", inherited=False):
        if not value.startswith("--from="):
            source, target = value.split()
            shutil.copy(REPO / source, _map(target, {"/wheels": wheels}))
    commands = runtime.commands()
    for command in commands:
        if command[:1] == ["pip"]:
            _pip(python, command, {"/wheels": wheels}, ["--no-index"], cwd=root)
        else:  # the user and the clean-up, which need root and change nothing the test checks
            assert command[0] in ("useradd", "rm"), command
    return python.parent


def test_the_installed_vigil_is_the_wheels(installed):
    where = _run([str(installed / "python"), "-c", "import vigil.cli, vigil.deploy.systemd; print(vigil.cli.__file__)"]).stdout
    assert where.startswith(str(installed.parent)), where
    # the wheel ships the generated units (package data) that `build --check` compares with
    checked = _run([str(installed / "vigil"), "deploy", "systemd", "build", "--check"]).stdout
    assert checked.startswith("OK: 4 files") and str(installed.parent) in checked, checked


_INSPECT = """
import json, sys, click
from vigil.cli import main

def command_of(words):
    ctx, command = None, main
    while isinstance(command, click.Group):
        ctx = click.Context(command, info_name=command.name, parent=ctx)
        command, words = command.get_command(ctx, words[0]), words[1:]
        assert command is not None, sys.argv
    return command, words, ctx

def listen_port(command):
    return int(next(p for p in command.params if p.name == "listen").default.rpartition(":")[2])

cmd, args, ctx = command_of(json.loads(sys.argv[1]))
parsed = cmd.make_context(cmd.name, list(args), parent=ctx).params["listen"]
others = [command_of(words)[0] for words in json.loads(sys.argv[2])]
print(json.dumps({"listen": list(parsed), "default_port": listen_port(cmd), "others": [listen_port(c) for c in others]}))
"""


@pytest.mark.parametrize("target", sorted(IMAGES))
def test_each_images_commands_exist_and_it_exposes_their_default_ports(installed, target):
    """The installed vigil parses the image's CMD with the command it names (every option validated,
    nothing run) and has the image's other command (docs/deploy.md); EXPOSE is their --listen defaults."""
    stage = stages()[target]
    argv = stage.exec_form("ENTRYPOINT") + stage.exec_form("CMD")
    assert argv[0] == "vigil" and tuple(argv[1:3]) == COMMANDS[target][0]
    found = json.loads(_run([str(installed / "python"), "-c", _INSPECT, json.dumps(argv[1:]),
                             json.dumps([list(other) for other in COMMANDS[target][1:]])]).stdout)
    exposed = {int(port) for value in stage.values("EXPOSE") for port in value.split()}
    assert exposed == {found["default_port"], *found["others"]}
    assert found["listen"][1] == found["default_port"]
    health = dict(value.split("=", 1) for value in stage.values("ENV"))["VIGIL_HEALTH_URL"]
    assert health.startswith(f"http://127.0.0.1:{found['default_port']}/")


def _healthcheck(installed: Path, stage, url: str) -> bool:
    """The image's HEALTHCHECK command, run by the installed venv's python with VIGIL_HEALTH_URL=url."""
    words = json.loads(stage.last("HEALTHCHECK").split(" CMD ", 1)[1])
    assert words[0] == "python"
    return subprocess.run([str(installed / "python"), *words[1:]], env={**os.environ, "VIGIL_HEALTH_URL": url},
                          capture_output=True, timeout=30, cwd=installed).returncode == 0


def test_each_images_healthcheck_passes_once_its_command_serves(installed, tmp_path):
    """Each image's CMD started from the installed venv on a loopback port (the image's paths mapped into
    tmp_path): its HEALTHCHECK fails before and passes once it serves. No GPU here, so the exporter's
    `--backend nvml` becomes the simulated fleet, which serves the same /metrics."""
    from vigil.notifier.console.passwords import hash_password
    from vigil.stack.config import demo_oncall_config

    base = free_ports(3)
    (tmp_path / "secrets").mkdir()
    (tmp_path / "secrets" / "webhook-token").write_text(secrets.token_urlsafe(32) + "\n")
    (tmp_path / "oncall.yaml").write_text(yaml.safe_dump(demo_oncall_config(hash_password("demo-password"))))
    paths = {"/run/secrets/vigil": tmp_path / "secrets", "/etc/vigil": tmp_path, "/var/lib/vigil": tmp_path}
    ports = {"services": base, "exporter": base + 1}
    running = {}
    try:
        for target, port in ports.items():
            stage = stages()[target]
            argv = [_map(word, paths) for word in stage.exec_form("CMD")]
            argv[argv.index("--listen") + 1] = f"127.0.0.1:{port}"
            if "--backend" in argv:
                argv[argv.index("--backend") + 1: argv.index("--backend") + 2] = ["sim", "--sim-nodes", "1",
                                                                                 "--control-listen", f"127.0.0.1:{base + 2}"]
            url = dict(v.split("=", 1) for v in stage.values("ENV"))["VIGIL_HEALTH_URL"]
            url = url.replace(url.split("/")[2], f"127.0.0.1:{port}")
            assert not _healthcheck(installed, stage, url), "nothing serves yet"
            running[target] = (subprocess.Popen([str(installed / "vigil"), *argv], cwd=tmp_path, stdout=subprocess.DEVNULL,
                                                stderr=subprocess.PIPE, text=True), stage, url)
        for target, (proc, stage, url) in running.items():
            wait_until(lambda: proc.poll() is not None or _healthcheck(installed, stage, url), timeout=90, step=0.5)
            assert proc.poll() is None, f"{target} exited: {proc.stderr.read()[-2000:]}"
    finally:
        for proc, _stage, _url in running.values():
            proc.terminate()
            proc.wait(timeout=30)
