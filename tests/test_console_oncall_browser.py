"""The on-call pages in a real browser (Playwright driving Debian's chromium) at a phone's width, against
a real notifier on a loopback port with its clock fixed: the schedule fits the screen (no sideways
scrolling) and shows the override; a window added with the form is listed; a page in the inbox leads to
its incident, the inbox showing it without a reload. `VIGIL_SCREENSHOTS=1` also writes the screenshots `docs/console.md`
shows under `docs/img/`."""

from __future__ import annotations


import pytest
import requests

from browser_support import DESKTOP, PHONE, shot
from sim_clock import FakeClock
from test_console_oncall_support import CAROL_PASSWORD, ONCALL, at, config
from test_notifier_support import AUTH, TOKEN, NotifierServer, alert, free_port, make_settings, payload

pytestmark = pytest.mark.e2e  # a real server and a real browser: seconds, not milliseconds

def test_the_on_call_pages_in_a_browser(tmp_path, browser):
    assert config()  # the file the server runs with validates
    server = NotifierServer(make_settings(tmp_path, port=free_port()), ONCALL, run_worker=True,
                            clock=FakeClock(at("2026-11-24T10:00")))
    with server:
        page = browser.new_page(viewport=PHONE, device_scale_factor=2)
        page.goto(f"{server.url}/console/schedules?schedule=gpu-primary")
        page.fill("input[name=username]", "token")
        page.fill("input[name=password]", TOKEN)
        page.click("button[type=submit]")
        page.wait_for_selector("#schedule-gpu-primary")
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth"), "sideways scrolling"
        override = page.locator("#schedule-gpu-primary li.day").nth(1).locator(".piece.override")
        assert override.is_visible() and override.inner_text().split() == ["12:00–24:00", "Carol", "Diaz", "override"]
        box = override.bounding_box()
        assert box["x"] >= 0 and box["x"] + box["width"] <= PHONE["width"]
        shot(page, tmp_path, "console-schedule-phone.png")

        page.goto(f"{server.url}/console/oncall")
        tier = page.locator("#team-gpu li.tier").first
        assert tier.inner_text().split()[:6] == ["TIER", "1", "·", "DRI", "Dong", "Wei"]
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth"), "sideways scrolling"
        shot(page, tmp_path, "console-oncall-phone.png")

        desktop = browser.new_page(viewport=DESKTOP)
        desktop.context.add_cookies(page.context.cookies())
        desktop.goto(f"{server.url}/console/maintenance")
        desktop.fill("input[name=match]", "node=gpu-node-07 gpu=3")
        desktop.fill("input[name=for]", "2h")
        desktop.fill("input[name=reason]", "NVLink firmware update")
        desktop.click("#new-window button[type=submit]")
        desktop.wait_for_selector("#windows-active tr.window[id]")
        assert "End now" in desktop.locator("#windows-active").inner_text()
        shot(desktop, tmp_path, "console-maintenance.png")

        desktop.goto(f"{server.url}/console/inbox")  # empty; the page arrives while it is open
        assert desktop.locator("div.page").count() == 0
        fired = requests.post(f"{server.url}/api/v1/alerts/alertmanager", headers=AUTH, timeout=5,
                              json=payload(alert(node="gpu-node-03", gpu="5", alertname="GpuXidError")))
        assert fired.status_code == 200, fired.text
        desktop.wait_for_selector("div.page", timeout=15_000)  # the live refresh, no reload
        assert desktop.locator("#live").inner_text().startswith("live · updated")
        card = desktop.locator("div.page").first
        assert "to Dong Wei (dong) · phone · tier 1" in card.inner_text()
        shot(desktop, tmp_path, "console-inbox.png")
        for path in ("/console/inbox", "/console/maintenance"):  # long links and tables fit a phone too
            page.goto(server.url + path)
            assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth"), path
        shot(page, tmp_path, "console-maintenance-phone.png")
        card.locator("a.incident-link").click()
        desktop.wait_for_url("**/console/incidents/*")
        assert "GpuXidError" in desktop.content()

        # Carol, on her phone, takes one of Dong's shifts: the form fits the screen and the saved
        # override shows under the schedule with her reason
        carol = browser.new_context(viewport=PHONE, device_scale_factor=2).new_page()
        carol.goto(f"{server.url}/console/login?next=/console/schedules%3Fschedule%3Dgpu-primary")
        carol.fill("input[name=username]", "carol")
        carol.fill("input[name=password]", CAROL_PASSWORD)
        carol.click("button[type=submit]")
        carol.wait_for_selector("#schedule-gpu-primary")
        carol.locator("#schedule-gpu-primary a.shift-action", has_text="take").first.click()
        carol.wait_for_selector("input[name=reason]")
        assert carol.evaluate("document.documentElement.scrollWidth <= window.innerWidth"), "the override form scrolls"
        carol.fill("input[name=reason]", "Dong is flying to the offsite")
        shot(carol, tmp_path, "console-override-phone.png")
        carol.click("button.primary")
        carol.wait_for_selector("ul.overrides.history")
        assert "Dong is flying to the offsite" in carol.locator("ul.overrides.history").inner_text()
        assert carol.evaluate("document.documentElement.scrollWidth <= window.innerWidth"), "sideways scrolling"
