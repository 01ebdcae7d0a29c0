"""The incident console in a real browser (Playwright driving Debian's chromium, never a downloaded
one) against a real notifier on a loopback port, incidents opened by Alertmanager webhook posts: log in,
see a new incident appear in the list without reloading, open it, acknowledge, add a note, resolve, and
see each change on its timeline. `VIGIL_SCREENSHOTS=1` also writes the list and incident page at desktop
and phone width to `docs/img/` (docs/console.md shows them)."""

from __future__ import annotations

import time

import pytest
import requests

from vigil.common.times import rfc3339
from console_support import HOOK, PASSWORDS, oncall_text
from browser_support import DESKTOP, PHONE, shot
from test_notifier_support import AUTH, NotifierServer, alert, free_port, make_settings, payload, wait_for

pytestmark = pytest.mark.e2e

# what a GPU cluster's notifier holds on a busy morning: (alertname, severity, node, gpu, minutes ago, summary)
FLEET = [
    ("GpuEccDoubleBitError", "critical", "gpu-node-03", "5", 95, "uncorrectable ECC error: retire the page, drain the node"),
    ("GpuThermalThrottling", "warning", "gpu-node-11", "2", 70, "GPU is clocked down by its thermal limit"),
    ("NodeDiskFillingUp", "info", "gpu-node-04", None, 52, "/var/lib/docker fills up within 24 h at this rate"),
    ("GpuNvlinkErrors", "warning", "gpu-node-09", "6", 31, "NVLink CRC errors are rising on link 3"),
    ("GpuXid79FallenOffBus", "critical", "gpu-node-07", "3", 4, "GPU has fallen off the bus (XID 79)"),
]


def fire(server: NotifierServer, name: str, severity: str, node: str, gpu: str | None, minutes_ago: float,
         summary: str) -> int:
    labels = {"alertname": name, "severity": severity, "node": node, "cluster": "train-a"}
    if gpu is not None:
        labels["gpu"] = gpu
    one = alert(fingerprint=f"fp-{name}", starts=rfc3339(time.time() - 60 * minutes_ago), **labels)
    if gpu is None:
        del one["labels"]["gpu"]
    one["annotations"]["summary"] = summary
    body = payload(one, group_key=f'{{}}:{{alertname="{name}"}}')
    body["commonAnnotations"]["summary"] = summary
    answer = requests.post(server.url + HOOK, json=body, headers=AUTH, timeout=10)
    assert answer.status_code == 200, answer.text
    return requests.get(f"{server.url}/api/v1/incidents", headers=AUTH, timeout=10).json()["incidents"][-1]["id"]


def api_incident(server: NotifierServer, incident_id: int) -> dict:
    return requests.get(f"{server.url}/api/v1/incidents/{incident_id}", headers=AUTH, timeout=10).json()


def test_an_engineer_works_an_incident_in_the_browser(tmp_path, browser):
    server = NotifierServer(make_settings(tmp_path, port=free_port()), oncall_text(), run_worker=True)
    with server:
        ids = {row[0]: fire(server, *row) for row in FLEET[:-1]}
        acked, resolved = ids["GpuThermalThrottling"], ids["NodeDiskFillingUp"]
        requests.post(f"{server.url}/api/v1/incidents/{acked}/ack", json={"by": "bob"}, headers=AUTH, timeout=10)
        requests.post(f"{server.url}/api/v1/incidents/{resolved}/resolve", json={"by": "bob"}, headers=AUTH, timeout=10)

        page = browser.new_page(viewport=DESKTOP)
        page.goto(f"{server.url}/console/incidents")
        assert "/console/login" in page.url  # no session: the login page, then back
        page.fill("input[name=username]", "alice")
        page.fill("input[name=password]", PASSWORDS["alice"])
        page.click("button[type=submit]")
        page.wait_for_selector("table#incidents tbody tr[data-id]")
        assert page.url.endswith("/console/incidents")
        # a new incident shows up on its own: the list polls its rows every few seconds
        newest = fire(server, *FLEET[-1])
        row = page.wait_for_selector(f'tr[data-id="{newest}"]', timeout=15000)
        assert "GpuXid79FallenOffBus" in row.inner_text() and "P1" in row.inner_text()
        wait_for(lambda: api_incident(server, newest)["pages"])  # tier 1 was paged
        page.reload()
        page.wait_for_selector(f'tr[data-id="{newest}"]')
        shot(page, tmp_path, "console-incidents.png")

        page.click(f'tr[data-id="{newest}"] td.title a')
        page.wait_for_selector("#timeline")
        assert page.inner_text("#state") == "triggered" and "Acknowledge by" in page.inner_text("aside")
        assert "alice" in page.inner_text("#pages")
        shot(page, tmp_path, "console-incident.png")

        page.click("button:has-text('Acknowledge')")
        page.wait_for_selector("#timeline li.ev-acknowledged")
        assert "by alice" in page.inner_text("#timeline li.ev-acknowledged") and page.inner_text("#state") == "acknowledged"
        page.fill("textarea[name=text]", "Drained gpu-node-07; GPU 3 needs a reseat, ticket DC-4411.")
        page.click("button:has-text('Add note')")
        note = page.wait_for_selector("#timeline li.ev-note .note")
        assert note.inner_text() == "Drained gpu-node-07; GPU 3 needs a reseat, ticket DC-4411."
        page.click("button:has-text('Resolve')")
        page.wait_for_selector("#timeline li.ev-resolved")
        assert page.inner_text("#state") == "resolved" and "by alice" in page.inner_text("#timeline li.ev-resolved")
        kinds = page.eval_on_selector_all("#timeline li", "items => items.map(i => i.className)")
        assert kinds.index("ev-acknowledged") < kinds.index("ev-note") < kinds.index("ev-resolved")
        detail = api_incident(server, newest)
        assert detail["acknowledged_by"] == "alice" and detail["resolved_by"] == "alice"

        phone = browser.new_page(viewport=PHONE, device_scale_factor=2)
        phone.context.add_cookies(page.context.cookies())
        phone.goto(f"{server.url}/console/incidents")
        phone.wait_for_selector("table#incidents tbody tr[data-id]")
        assert phone.evaluate("document.documentElement.scrollWidth <= window.innerWidth"), "sideways scrolling"
        shot(phone, tmp_path, "console-incidents-phone.png")
        phone.goto(f"{server.url}/console/incidents/{ids['GpuEccDoubleBitError']}")
        phone.wait_for_selector("#timeline")
        assert phone.evaluate("document.documentElement.scrollWidth <= window.innerWidth"), "sideways scrolling"
        shot(phone, tmp_path, "console-incident-phone.png")
        # someone else acts on the incident shown: the page offers a reload instead of going stale
        ecc = ids["GpuEccDoubleBitError"]
        requests.post(f"{server.url}/api/v1/incidents/{ecc}/notes", json={"by": "bob", "text": "on it"},
                      headers=AUTH, timeout=10)
        phone.wait_for_selector("#live a:has-text('reload')", timeout=15000)
        phone.click("#live a")
        assert phone.wait_for_selector("#timeline li.ev-note .note").inner_text() == "on it"
