"""What `systemd-analyze` cannot tell: that vigil's processes work inside the sandbox their units give
them. There is no systemd as PID 1 here, so each unit's command runs under the parts of its sandbox a
process can put itself in, read from the generated unit: its user (a dynamic user becomes an
unprivileged uid with no groups), its capability bounding set, no_new_privs (`NoNewPrivileges=`) and
the kernel's memory-deny-write-execute (prctl PR_SET_MDWE, what `MemoryDenyWriteExecute=` enforces
with a seccomp filter); then its health endpoint must answer. Mount namespaces, the syscall filter and
the device policy are not reproduced."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest
import requests
import yaml
from click.testing import CliRunner

from deploy_systemd_support import exec_argv, unit_setting
from exporters_nvml_support import free_ports, wait_until
from vigil.aiops.baseline import synthetic
from vigil.cli import main

SETPRIV = shutil.which("setpriv")
NOBODY = 65534
CAPABILITIES = {"CAP_SYS_RAWIO": 17, "CAP_SYS_ADMIN": 21}  # bit numbers (linux/capability.h)
# prctl(PR_SET_MDWE, PR_MDWE_REFUSE_EXEC_GAIN) then exec: no mapping of this process or its children can
# become writable and executable (Linux 6.3+)
MDWE_EXEC = ("import ctypes, os, sys\nlibc = ctypes.CDLL(None, use_errno=True)\n"
             "if libc.prctl(65, 1, 0, 0, 0): sys.exit('PR_SET_MDWE: ' + os.strerror(ctypes.get_errno()))\n"
             "os.execv(sys.argv[1], sys.argv[1:])")


def _mdwe_supported() -> bool:
    return subprocess.run([sys.executable, "-c", MDWE_EXEC, "/bin/true"], capture_output=True).returncode == 0


pytestmark = [pytest.mark.e2e,
              pytest.mark.skipif(SETPRIV is None or os.geteuid() != 0, reason="needs root and setpriv (util-linux)"),
              pytest.mark.skipif(not _mdwe_supported(), reason="the kernel has no PR_SET_MDWE (Linux < 6.3)")]


def sandboxed(unit_name: str, argv: list[str]) -> list[str]:
    """argv under the unit's user, capabilities, NoNewPrivileges and MemoryDenyWriteExecute."""
    assert unit_setting(unit_name, "NoNewPrivileges") == ["yes"]
    assert unit_setting(unit_name, "MemoryDenyWriteExecute") == ["yes"]
    caps = unit_setting(unit_name, "CapabilityBoundingSet")[0].split()
    bounding = ",".join(["-all", *(f"+{cap.removeprefix('CAP_').lower()}" for cap in caps)])
    user = ["--reuid", str(NOBODY), "--regid", str(NOBODY), "--clear-groups"] \
        if unit_setting(unit_name, "DynamicUser") == ["yes"] else []
    # MDWE first (it is inherited across exec), so setpriv is what switches the user and execs argv
    return [sys.executable, "-c", MDWE_EXEC, SETPRIV, *user, "--no-new-privs", "--inh-caps=-all",
            f"--bounding-set={bounding}", "--", *argv]


def test_mdwe_as_used_here_refuses_writable_executable_memory():
    """The wrapper is in force: a W+X mapping fails under it, and works without it."""
    code = "import mmap; mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)"
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0
    assert subprocess.run([sys.executable, "-c", MDWE_EXEC, sys.executable, "-c", code], capture_output=True).returncode != 0


@pytest.fixture
def workdir():
    """Files the units find in /etc/vigil, their credentials and state, owned by the dynamic user as
    `StateDirectory=` and `LoadCredential=` leave them (pytest's own tmp_path is root-only)."""
    from vigil.notifier.console.passwords import hash_password
    from vigil.stack.config import demo_oncall_config

    root = Path(tempfile.mkdtemp(prefix="vigil-sandbox-"))
    root.chmod(0o755)
    (root / "creds").mkdir()
    (root / "creds" / "webhook-token").write_text(os.urandom(24).hex() + "\n")
    (root / "oncall.yaml").write_text(yaml.safe_dump(demo_oncall_config(hash_password("demo-password"))))
    # the AIOps unit's model store (StateDirectory=): trained beforehand, as after its first refit
    t = synthetic.grid(days=3)
    rows = [f"{int(s)},{float(v)!r},vigil_gpu_utilization_ratio,node-1,0,gpu,n1:9835"
            for s, v in zip(t, synthetic.GENERATORS["periodic"](t, np.random.default_rng(0)))]
    (root / "history.csv").write_text("timestamp,value,metric,node,gpu,job,instance\n" + "\n".join(rows) + "\n")
    result = CliRunner().invoke(main, ["aiops", "train", "--input", str(root / "history.csv"),
                                       "--model-dir", str(root / "state" / "vigil-aiops")])
    assert result.exit_code == 0, result.output
    for path in [root, *root.rglob("*")]:
        os.chown(path, NOBODY, NOBODY)
    (root / "creds" / "webhook-token").chmod(0o400)
    yield root
    shutil.rmtree(root)


def test_each_unit_serves_inside_its_sandbox(workdir):
    base = free_ports(6)
    unused = base + 5  # Alertmanager and Prometheus: not running, so the services' reads fail softly
    runs = {
        "vigil-notifier": ({"VIGIL_LISTEN": f"127.0.0.1:{base}", "VIGIL_DB": f"sqlite:///{workdir}/notifier.db",
                            "VIGIL_ONCALL_CONFIG": str(workdir / "oncall.yaml"),
                            "VIGIL_ALERTMANAGER_URL": f"http://127.0.0.1:{unused}",
                            "VIGIL_PROMETHEUS_URL": f"http://127.0.0.1:{unused}"}, f"http://127.0.0.1:{base}/healthz"),
        "vigil-aiops": ({"VIGIL_LISTEN": f"127.0.0.1:{base + 1}", "VIGIL_PROMETHEUS_URL": f"http://127.0.0.1:{unused}"},
                        f"http://127.0.0.1:{base + 1}/healthz"),
        # no GPU here: VIGIL_ARGS (the env file's extra flags) switches the backend to the simulated fleet
        "vigil-gpu-exporter": ({"VIGIL_LISTEN": f"127.0.0.1:{base + 2}",
                                "VIGIL_ARGS": f"--backend sim --sim-nodes 1 --control-listen 127.0.0.1:{base + 3}"},
                               f"http://127.0.0.1:{base + 2}/metrics"),
        # no disks to read here: simulated SMART
        "vigil-node-exporter": ({"VIGIL_LISTEN": f"127.0.0.1:{base + 4}", "VIGIL_ARGS": "--simulate"},
                                f"http://127.0.0.1:{base + 4}/metrics"),
    }
    procs = {}
    try:
        for name, (environment, _url) in runs.items():
            argv = exec_argv(name, environment, credentials=str(workdir / "creds"), state=str(workdir / "state"))
            # the unit's binary is this venv's vigil, run as `python -P -m vigil.cli` (the stack's own way)
            procs[name] = subprocess.Popen(sandboxed(name, [sys.executable, "-P", "-m", "vigil.cli", *argv[1:]]), cwd=workdir, stdout=subprocess.DEVNULL,
                                           stderr=subprocess.PIPE, text=True)
        for name, (_environment, url) in runs.items():
            proc = procs[name]
            wait_until(lambda: proc.poll() is not None or _answers(url), timeout=90, step=0.25)
            assert proc.poll() is None, f"{name} exited in its sandbox: {proc.stderr.read()[-3000:]}"
            status = dict(line.split(":\t", 1) for line in Path(f"/proc/{proc.pid}/status").read_text().splitlines()
                          if ":\t" in line)
            dynamic = unit_setting(name, "DynamicUser") == ["yes"]
            assert status["Uid"].split()[0] == str(NOBODY if dynamic else 0) and status["NoNewPrivs"].strip() == "1"
            assert int(status["CapBnd"], 16) == sum(1 << CAPABILITIES[c] for c in
                                                    unit_setting(name, "CapabilityBoundingSet")[0].split())
    finally:
        for proc in procs.values():
            proc.terminate()
        for proc in procs.values():
            proc.wait(timeout=30)


def _answers(url: str) -> bool:
    try:
        return requests.get(url, timeout=2).ok
    except requests.RequestException:
        return False
