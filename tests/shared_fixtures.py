"""Fixtures more than one test module uses, as a pytest plugin (tests/conftest.py registers it): pytest
finds them, no test module imports them.

- `rendered`: the Kubernetes overlays (small, large) rendered once per module.
- `alertmanager`: the generated Alertmanager configuration in a real Alertmanager (its URL).
- `run_dir`: a notifier run directory: the webhook token and an inbox-only on-call file.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

import pytest
import requests

from vigil import rules
from vigil.common.ports import free_port
from vigil.deploy.k8s import DEFAULT_OUTPUT
from vigil.deploy.k8s.kustomize import render_overlay
from vigil.rules.alertmanager import alertmanager_config, webhook_receiver
from vigil.rules.alertmanager_routing import ROUTING_FILE, load_routing
from test_notifier_support import INBOX_ONLY, TOKEN

AM = shutil.which("prometheus-alertmanager") or shutil.which("alertmanager")


@pytest.fixture(scope="module")
def rendered() -> dict[str, list[dict]]:
    return {size: render_overlay(DEFAULT_OUTPUT / "overlays" / size) for size in ("small", "large")}


@pytest.fixture
def alertmanager(tmp_path):
    ruleset = rules.load_specs(rules.default_spec_paths())
    webhook = webhook_receiver(f"http://127.0.0.1:{free_port()}/hook")  # nobody listens: notifications fail
    config = alertmanager_config(ruleset, load_routing(ROUTING_FILE, ruleset), webhook)
    (tmp_path / "am.yml").write_text(rules.dump_yaml(config))
    url = f"http://127.0.0.1:{free_port()}"
    proc = subprocess.Popen([AM, f"--config.file={tmp_path / 'am.yml'}", f"--storage.path={tmp_path / 'data'}",
                             f"--web.listen-address={url[7:]}", "--cluster.listen-address="],
                            stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                if requests.get(f"{url}/-/ready", timeout=1).ok:
                    break
            except requests.ConnectionError:
                pass
            assert proc.poll() is None and time.monotonic() < deadline, "Alertmanager did not start"
            time.sleep(0.2)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.fixture
def run_dir(tmp_path) -> Path:
    (tmp_path / "secrets").mkdir()
    (tmp_path / "secrets" / "webhook-token").write_text(TOKEN + "\n")
    (tmp_path / "secrets" / "webhook-token").chmod(0o600)
    (tmp_path / "oncall.yaml").write_text(INBOX_ONLY)
    return tmp_path
