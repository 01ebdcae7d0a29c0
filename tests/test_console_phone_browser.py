"""Every page of the console on a phone (Chromium at 390 × 844): none may scroll sideways, whatever it
holds. The incident is the one that widened pages before: a P1 whose phone call failed three times and
fell back to SMS, then resolved, so its pages table lists both contacts with their attempts and errors."""

from __future__ import annotations

import re

import pytest
import requests

from browser_support import PHONE
from console_support import HOOK, PASSWORDS, oncall_text
from test_notifier_support import AUTH, NotifierServer, alert, free_port, make_settings, payload, wait_for

pytestmark = pytest.mark.e2e

# alice's phone is a gateway that is down (nothing listens on port 9 of loopback): three failed calls,
# then her SMS (the local inbox) carries the page
PHONE_FAILS = oncall_text().replace(
    "  alice:\n    password_hash:", "  alice:\n    timezone: Asia/Kolkata\n    password_hash:", 1).replace(
    "      phone: {inbox: true, kind: phone}\n  bob:",
    "      phone: {url: \"json://127.0.0.1:9/phone\", kind: phone}\n"
    "      sms: {inbox: true, kind: sms}\n  bob:", 1)


def test_no_console_page_is_wider_than_a_phone(tmp_path, browser):
    settings = make_settings(tmp_path, port=free_port(), retry_base_s=0.05, retry_max_s=0.1)
    with NotifierServer(settings, PHONE_FAILS, run_worker=True) as server:
        long_node = "gpu-node-" + "a" * 60  # a label value longer than the screen is wide
        body = payload(alert("wide", node=long_node, cluster="train-a-with-a-long-cluster-name"),
                       group_key='{}:{alertname="GpuLost"}')
        assert requests.post(server.url + HOOK, json=body, headers=AUTH, timeout=10).status_code == 200
        incident = requests.get(f"{server.url}/api/v1/incidents", headers=AUTH, timeout=10).json()["incidents"][-1]["id"]

        def fell_back() -> bool:
            pages = requests.get(f"{server.url}/api/v1/incidents/{incident}", headers=AUTH, timeout=10).json()["pages"]
            return any(p["contact"] == "sms" and p["state"] == "sent" for p in pages)
        wait_for(fell_back, timeout=30)
        requests.post(f"{server.url}/api/v1/incidents/{incident}/resolve", json={"by": "alice"}, headers=AUTH,
                      timeout=10)
        requests.post(f"{server.url}/api/v1/incidents/{incident}/notes",
                      json={"by": "bob", "text": "reseated " + "x" * 120}, headers=AUTH, timeout=10)

        phone = browser.new_page(viewport=PHONE, device_scale_factor=2)
        phone.goto(f"{server.url}/console/login")
        assert_fits(phone, "the login page")
        phone.fill("input[name=username]", "alice")
        phone.fill("input[name=password]", PASSWORDS["alice"])
        phone.click("button[type=submit]")
        phone.wait_for_selector("table#incidents")
        for path in ("/console/incidents", f"/console/incidents/{incident}",
                     f"/console/incidents/{incident}/postmortem", "/console/inbox", "/console/maintenance",
                     "/console/oncall", "/console/schedules", "/console/reports", "/console/push"):
            response = phone.goto(server.url + path)
            assert response.status == 200, (path, response.status)
            phone.wait_for_load_state("networkidle")
            assert_fits(phone, path)
        inbox = requests.get(f"{server.url}/api/v1/inbox", headers=AUTH, timeout=10).json()["pages"]
        links = [url for page in inbox for url in re.findall(r"https?://\S+/l/\S+", page["body"])]
        assert links, "the SMS page carries its acknowledge link"
        phone.goto(links[0])
        assert_fits(phone, "a one-click link's page")


def assert_fits(page, what: str) -> None:
    wide = page.evaluate("document.documentElement.scrollWidth")
    # the elements that reach past the screen, innermost first: what to fix when it fails
    past = page.evaluate("""w => [...document.querySelectorAll('body *')]
        .filter(e => e.getBoundingClientRect().right > w + 1 && ![...e.children].some(
            c => c.getBoundingClientRect().right > w + 1) && !e.closest('table'))
        .slice(0, 5).map(e => e.tagName.toLowerCase() + (e.id ? '#' + e.id : '') + (e.className ? '.' + e.className : '')
                          + ' ' + Math.round(e.getBoundingClientRect().right))""", PHONE["width"])
    assert wide <= PHONE["width"], (f"{what} is {wide} px wide on a {PHONE['width']} px phone: it scrolls "
                                    f"sideways ({', '.join(past)})")
