"""The console against the whole demo stack that `vigil up` starts (real Prometheus and Alertmanager, the
simulated fleet, the notifier): `vigil up` says where the console is and the demo login; a GPU fault
injected into the fleet becomes an incident that the demo's DRI, logged in with that login in Debian's
chromium, acknowledges, annotates and resolves, each change appearing on the incident's timeline."""

from __future__ import annotations

import re

import pytest
import requests

from stack_support import start_stack
from browser_support import DESKTOP
from test_notifier_support import wait_for

pytestmark = pytest.mark.e2e


def test_a_fault_through_prometheus_and_alertmanager_is_worked_in_the_console(tmp_path, browser):
    stack = start_stack(tmp_path, nodes=2, gpus=2, node_health=False)
    try:
        notifier = stack.url("notifier")
        password = (stack.run_dir / "secrets" / "console-demo-password").read_text().strip()
        said = stack.started.stdout
        assert f"web console: {notifier}/console/" in said and f"log in as ana, password {password}" in said
        assert password not in (stack.run_dir / "logs" / "supervisor.log").read_text()  # the terminal only
        auth = {"Authorization": f"Bearer {stack.token()}"}
        assert stack.cli("chaos", "inject", "xid79", "--node", "node-2", "--gpu", "1").returncode == 0

        def firing() -> list[dict]:
            found = requests.get(f"{notifier}/api/v1/incidents?state=triggered", headers=auth, timeout=5).json()
            return [i for i in found["incidents"] if i["labels"].get("node") == "node-2"]
        [incident] = wait_for(firing, timeout=60, interval=0.5)

        page = browser.new_page(viewport=DESKTOP)
        page.goto(f"{notifier}/console/incidents?state=open&node=node-2")
        page.fill("input[name=username]", "ana")
        page.fill("input[name=password]", password)
        page.click("button[type=submit]")
        page.click(f'tr[data-id="{incident["id"]}"] td.title a')
        page.wait_for_selector("#timeline")
        assert re.search(r"node=node-2\b", page.inner_text("h1")) and page.inner_text("#state") == "triggered"
        page.click("button:has-text('Acknowledge')")
        assert "by ana" in page.wait_for_selector("#timeline li.ev-acknowledged").inner_text()
        page.fill("textarea[name=text]", "GPU 1 of node-2 fell off the bus; node cordoned.")
        page.click("button:has-text('Add note')")
        assert page.wait_for_selector("#timeline li.ev-note .note").inner_text() == "GPU 1 of node-2 fell off the bus; node cordoned."
        page.click("button:has-text('Resolve')")
        assert "by ana" in page.wait_for_selector("#timeline li.ev-resolved").inner_text()
        assert page.inner_text("#state") == "resolved"
        detail = requests.get(f"{notifier}/api/v1/incidents/{incident['id']}", headers=auth, timeout=5).json()
        assert detail["acknowledged_by"] == "ana" and detail["resolved_by"] == "ana"
        assert any(p["state"] == "sent" for p in detail["pages"])  # the DRI of the week was paged first
    finally:
        stack.cli("chaos", "clear")
        stack.cli("down")
