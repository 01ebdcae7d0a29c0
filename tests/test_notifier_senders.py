"""The outbox worker sends pages concurrently: a slow channel neither serialises its own pages nor holds
back the others, and every page is sent and recorded once."""

from __future__ import annotations

import sqlite3
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import requests

from test_notifier_support import AUTH, NotifierServer, alert, free_port, make_settings, payload, wait_for

HOOK = "/api/v1/alerts/alertmanager"
PAGES = 6


class HeldEndpoint:
    """An HTTP endpoint that holds every POST until `release` is set (a slow SMS gateway), counting the
    requests it holds at once."""

    def __init__(self):
        self.release = threading.Event()
        self.holding = 0
        self.most_held = 0
        self.answered = 0
        lock = threading.Lock()
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                with lock:
                    endpoint.holding += 1
                    endpoint.most_held = max(endpoint.most_held, endpoint.holding)
                endpoint.release.wait(30)
                self.send_response(200)
                self.end_headers()
                with lock:
                    endpoint.holding -= 1
                    endpoint.answered += 1

            def log_message(self, *args):
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> "HeldEndpoint":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.release.set()
        self._server.shutdown()
        self._server.server_close()


def test_pages_to_a_slow_channel_go_out_together_and_do_not_hold_back_the_inbox(tmp_path):
    with HeldEndpoint() as gateway:
        oncall = f"""
targets:
  sre:
    channels:
      - type: apprise
        url: "json://127.0.0.1:{gateway.port}/sms?rto=30"
      - type: inbox
default: sre
"""
        with NotifierServer(make_settings(tmp_path, port=free_port()), oncall) as server:
            for i in range(PAGES):
                requests.post(server.url + HOOK, json=payload(alert(f"fp-{i}"), group_key=f"{{}}:{{i=\"{i}\"}}"),
                              headers=AUTH, timeout=5).raise_for_status()
            # every page to the gateway is in flight at once, none answered yet ...
            wait_for(lambda: gateway.holding == PAGES)
            # ... while the inbox pages of the same notifications all arrive (recorded with their pass)
            wait_for(lambda: len(requests.get(server.url + "/api/v1/inbox", headers=AUTH, timeout=5).json()["pages"])
                     == PAGES)
            assert gateway.answered == 0 and gateway.holding == PAGES
            gateway.release.set()
            db_path = tmp_path / "notifier.db"
            wait_for(lambda: sqlite3.connect(db_path).execute(
                "SELECT count(*) FROM deliveries WHERE state = 'sent'").fetchone() == (2 * PAGES,))
    assert gateway.most_held == PAGES and gateway.answered == PAGES  # each page sent once
    with sqlite3.connect(tmp_path / "notifier.db") as db:
        assert db.execute("SELECT count(*), count(DISTINCT delivery_id) FROM delivery_attempts").fetchone() == (
            2 * PAGES, 2 * PAGES)
        attempts = db.execute("SELECT count(*) FROM incident_events WHERE kind = 'page_attempt'").fetchone()
        assert attempts == (2 * PAGES,)  # each attempt on its incident's timeline
        assert db.execute("SELECT count(DISTINCT delivery_id) FROM inbox_pages").fetchone() == (PAGES,)
