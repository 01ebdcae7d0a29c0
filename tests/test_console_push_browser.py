"""Web Push, the browser's half, in Chromium at phone size: the console installs as a web app (manifest,
icons, a service worker for /console/), and its service worker turns a pushed page into a notification
that, tapped, opens the incident with Acknowledge first.

Chromium's own push service is Google's (unreachable here), so the push message is handed to the
service worker by the DevTools protocol (`ServiceWorker.deliverPushMessage`), with the payload the
notifier's sender encrypts (`tests/test_notifier_webpush.py` checks that half). The protocol has no
"tap the notification": the test runs the worker's own click handler (`openIncident`, what its
`notificationclick` listener calls) on the notification the push showed."""

from __future__ import annotations

import json

import pytest
import requests

from browser_support import PHONE, shot
from test_notifier_support import NotifierServer, alert, free_port, make_settings, payload, post_alerts, wait_for
from test_notifier_webpush import ONCALL, PASSWORD

pytestmark = pytest.mark.e2e


def test_a_pushed_page_shows_as_a_notification_and_a_tap_opens_its_incident(tmp_path, browser):
    settings = make_settings(tmp_path, port=free_port(), vapid_key_file=tmp_path / "vapid.pem")
    with NotifierServer(settings, ONCALL) as server:
        manifest = requests.get(f"{server.url}/console/manifest.webmanifest", timeout=5)
        assert manifest.headers["content-type"].startswith("application/manifest+json")
        app = manifest.json()
        assert app["display"] == "standalone" and app["scope"] == "/console/"
        for icon in app["icons"]:  # the sizes an install prompt needs, each a real PNG of its size
            png = requests.get(server.url + icon["src"], timeout=5).content
            assert png[:8] == b"\x89PNG\r\n\x1a\n" and f"{int.from_bytes(png[16:20], 'big')}x" in icon["sizes"]
        incident_id = post_alerts(server, payload(alert(team="gpu")))

        context = browser.new_context(viewport=PHONE, device_scale_factor=2)
        context.grant_permissions(["notifications"], origin=server.url)
        phone = context.new_page()
        phone.goto(f"{server.url}/console/login")
        phone.fill("input[name=username]", "ana")
        phone.fill("input[name=password]", PASSWORD)
        phone.click("button[type=submit]")
        phone.wait_for_selector("table#incidents")
        phone.goto(f"{server.url}/console/push")
        assert phone.locator("#push-on").is_visible()
        shot(phone, tmp_path, "console-push-phone.png")
        # every console page registers the worker; it takes the open pages over when it activates
        assert phone.evaluate("navigator.serviceWorker.ready.then(r => r.scope)") == f"{server.url}/console/"
        wait_for(lambda: phone.evaluate("!!navigator.serviceWorker.controller"), timeout=10)

        cdp = context.new_cdp_session(phone)
        registrations = []
        cdp.on("ServiceWorker.workerRegistrationUpdated", lambda event: registrations.extend(event["registrations"]))
        cdp.send("ServiceWorker.enable")

        def registration_id() -> str | None:
            phone.evaluate("1")  # a round trip lets Playwright hand over the protocol's events so far
            return next((r["registrationId"] for r in registrations
                         if r["scopeURL"] == f"{server.url}/console/" and not r["isDeleted"]), None)
        registration = wait_for(registration_id)
        page = {"title": "P1 GpuLost on node-1", "body": "GPU 0 fell off the bus", "status": "firing",
                "incident": incident_id, "tag": f"vigil-incident-{incident_id}",
                "url": f"/console/incidents/{incident_id}"}
        cdp.send("ServiceWorker.deliverPushMessage", {"origin": server.url, "registrationId": registration,
                                                      "data": json.dumps(page)})
        shown = wait_for(lambda: phone.evaluate(
            "navigator.serviceWorker.ready.then(r => r.getNotifications())"
            ".then(ns => ns.map(n => ({title: n.title, body: n.body, tag: n.tag, data: n.data,"
            " sticky: n.requireInteraction, actions: n.actions.map(a => a.title)})))"), timeout=10)
        assert shown == [{"title": page["title"], "body": page["body"], "tag": page["tag"],
                          "data": {"url": page["url"], "incident": incident_id}, "sticky": True,
                          "actions": ["Open to acknowledge"]}]

        worker = context.service_workers[0]
        worker.evaluate("self.registration.getNotifications().then(ns => openIncident(ns[0])).then(() => true)")
        phone.wait_for_url(f"{server.url}/console/incidents/{incident_id}", timeout=10_000)
        first_button = phone.locator("main button").first
        assert first_button.inner_text() == "Acknowledge" and first_button.is_visible()
        assert phone.evaluate("navigator.serviceWorker.ready.then(r => r.getNotifications()).then(ns => ns.length)") == 0
        shot(phone, tmp_path, "console-push-tapped-phone.png")
        context.close()
