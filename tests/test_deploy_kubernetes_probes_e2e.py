"""The probes of the Kubernetes manifests point at real health endpoints: each vigil container's own
command line (from the rendered base) runs here, and its readiness and liveness paths answer.

What a laptop lacks is swapped, and only that: the container's `0.0.0.0:PORT` becomes a free loopback
port, mounted Secrets and emptyDirs become files under tmp_path with the Secret's own contents, the
PostgreSQL URL (a placeholder) becomes SQLite, the GPU exporter reads the simulated fleet instead of
NVML and the node health exporter simulated disks instead of smartctl.
"""

from __future__ import annotations

import re
import secrets
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests

from vigil.common.ports import free_port
from vigil.deploy.k8s import DEFAULT_OUTPUT
from vigil.deploy.k8s.kustomize import render_overlay

pytestmark = pytest.mark.e2e
LOCAL_SWAPS = {"--backend nvml": "--backend sim", "--sysfs-root /host/sys": "--sysfs-root /sys --simulate"}


def _env(container: dict, named: dict, tmp_path: Path) -> dict[str, str]:
    env = {}
    for var in container.get("env", []):
        ref = var.get("valueFrom", {})
        if "secretKeyRef" in ref:
            env[var["name"]] = named["Secret", ref["secretKeyRef"]["name"]]["stringData"][ref["secretKeyRef"]["key"]]
        elif "configMapKeyRef" in ref:
            env[var["name"]] = named["ConfigMap", ref["configMapKeyRef"]["name"]]["data"][ref["configMapKeyRef"]["key"]]
        elif "fieldRef" in ref:
            env[var["name"]] = "node-1"
        else:
            env[var["name"]] = var["value"]
    if env.get("VIGIL_NOTIFIER_DB", "").startswith("postgresql://"):
        env["VIGIL_NOTIFIER_DB"] = f"sqlite:///{tmp_path / 'notifier.db'}"
    return env


def _mounts(pod: dict, container: dict, named: dict, tmp_path: Path) -> dict[str, str]:
    """mountPath -> a local folder holding what Kubernetes would mount there."""
    volumes = {v["name"]: v for v in pod["volumes"]}
    local = {}
    for mount in container.get("volumeMounts", []):
        volume = volumes[mount["name"]]
        folder = tmp_path / mount["name"]
        folder.mkdir()
        if "secret" in volume:
            for key, text in named["Secret", volume["secret"]["secretName"]]["stringData"].items():
                # the token Secret holds a placeholder the user replaces: replace it, as they would
                (folder / key).write_text(secrets.token_urlsafe(32) if key == "token" else text)
        if "secret" in volume or "emptyDir" in volume:
            local[mount["mountPath"]] = str(folder)
    return local


def _mounted(arg: str, mounts: dict[str, str]) -> str:
    for mount_path, folder in mounts.items():
        if arg == mount_path or arg.startswith(mount_path + "/"):
            return folder + arg.removeprefix(mount_path)
    return arg


def local_command(pod: dict, container: dict, named: dict, tmp_path: Path) -> tuple[list[str], int]:
    env, mounts = _env(container, named, tmp_path), _mounts(pod, container, named, tmp_path)
    port = free_port()
    args = [_mounted(arg, mounts) for arg in container["args"]]
    line = " ".join(args)
    for theirs, ours in LOCAL_SWAPS.items():
        line = line.replace(theirs, ours)
    line = re.sub(r"\$\((\w+)\)", lambda m: env[m.group(1)], line)
    line = re.sub(r"0\.0\.0\.0:\d+", f"127.0.0.1:{port}", line)
    return [sys.executable, "-P", "-m", "vigil.cli", *line.split(" ")], port


def wait_for(url: str, proc: subprocess.Popen, status: int, timeout: float = 60) -> requests.Response:
    deadline = time.monotonic() + timeout
    while True:
        assert proc.poll() is None, f"{proc.args} exited:\n{proc.stdout.read()}"
        try:
            answer = requests.get(url, timeout=5)
            if answer.status_code == status:
                return answer
        except requests.ConnectionError:
            pass
        assert time.monotonic() < deadline, f"{url} did not answer {status}"
        time.sleep(0.2)


# workload -> (readiness status expected here, why): the AIOps service has no model without Prometheus
WORKLOADS = {("DaemonSet", "vigil-gpu-exporter"): 200, ("DaemonSet", "vigil-node-health"): 200,
             ("Deployment", "vigil-notifier"): 200, ("Deployment", "vigil-aiops"): 503}


def test_every_vigil_probe_answers_on_the_real_command(tmp_path):
    objects = render_overlay(DEFAULT_OUTPUT / "base")
    named = {(o["kind"], o["metadata"]["name"]): o for o in objects}
    vigil_images = [key for key, o in named.items() if o["kind"] in ("Deployment", "DaemonSet")
                    and o["spec"]["template"]["spec"]["containers"][0]["image"].startswith("vigil-")]
    assert sorted(vigil_images) == sorted(WORKLOADS)
    started = []
    try:
        for (kind, name), ready_status in WORKLOADS.items():
            pod = named[kind, name]["spec"]["template"]["spec"]
            [container] = pod["containers"]
            workdir = tmp_path / name
            workdir.mkdir()
            argv, port = local_command(pod, container, named, workdir)
            proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=workdir)
            started.append((proc, container, port, ready_status))
        for proc, container, port, ready_status in started:
            live = container["livenessProbe"]["httpGet"]["path"]
            ready = container["readinessProbe"]["httpGet"]["path"]
            wait_for(f"http://127.0.0.1:{port}{live}", proc, 200)
            wait_for(f"http://127.0.0.1:{port}{ready}", proc, ready_status)
    finally:
        for proc, *_ in started:
            proc.terminate()
        for proc, *_ in started:
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def test_the_notifier_refuses_to_start_with_the_placeholder_token(tmp_path):
    objects = render_overlay(DEFAULT_OUTPUT / "base")
    named = {(o["kind"], o["metadata"]["name"]): o for o in objects}
    (tmp_path / "token").write_text(named["Secret", "vigil-webhook-token"]["stringData"]["token"])
    (tmp_path / "oncall.yaml").write_text(named["Secret", "vigil-oncall"]["stringData"]["oncall.yaml"])
    result = subprocess.run([sys.executable, "-P", "-m", "vigil.cli", "notifier", "serve", "--listen", f"127.0.0.1:{free_port()}",
                             "--db", f"sqlite:///{tmp_path / 'n.db'}", "--token-file", str(tmp_path / "token"),
                             "--oncall-config", str(tmp_path / "oncall.yaml")],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode != 0
    assert "shorter than 16 characters" in result.stderr + result.stdout
