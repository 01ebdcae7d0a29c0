"""Helpers shared by the notifier tests (no tests here): payload builders, a real uvicorn server in a
thread (and a run directory pointing at it, for the CLI), and a small HTTP endpoint that records what
apprise sends it."""

from __future__ import annotations

import fcntl
import json
import os
import threading
import time
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import requests
import sqlalchemy as sa
import uvicorn

from vigil.common.ports import free_port  # noqa: F401  (the notifier tests import it from here)
from vigil.notifier.app import create_app
from vigil.notifier.settings import NotifierSettings
from vigil.oncall.loader import parse_oncall
from vigil.stack.runstate import ComponentState, StackState
from vigil.stack.config import RunLayout

TOKEN = "test-token-0123456789abcdef"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
INBOX_ONLY = """
targets:
  demo-dri:
    name: Demo DRI
    channels:
      - type: inbox
routes:
  - match: {severity: critical}
    notify: demo-dri
default: demo-dri
"""


def alert(fingerprint="fp-1", status="firing", starts="2026-11-21T20:00:00.123456789Z", **labels) -> dict:
    labels = {"alertname": "GpuLost", "node": "node-1", "gpu": "0", "severity": "critical", **labels}
    return {"status": status, "labels": labels, "annotations": {"summary": "GPU fell off the bus"},
            "startsAt": starts,
            "endsAt": "0001-01-01T00:00:00Z" if status == "firing" else "2026-11-21T20:05:00Z",
            "generatorURL": "http://prometheus/graph", "fingerprint": fingerprint}


def payload(*alerts: dict, group_key='{}:{alertname="GpuLost"}', status=None) -> dict:
    alerts = list(alerts) or [alert()]
    if status is None:
        status = "firing" if any(a["status"] == "firing" for a in alerts) else "resolved"
    common = {k: v for k, v in alerts[0]["labels"].items() if all(a["labels"].get(k) == v for a in alerts)}
    return {"version": "4", "groupKey": group_key, "truncatedAlerts": 0, "status": status, "receiver": "vigil",
            "groupLabels": {"alertname": common.get("alertname", "")}, "commonLabels": common,
            "commonAnnotations": {"summary": "GPU fell off the bus"}, "externalURL": "http://alertmanager",
            "alerts": alerts}


def make_settings(tmp_path: Path, port: int = 9, **overrides) -> NotifierSettings:
    values = dict(port=port, db_url=f"sqlite:///{tmp_path / 'notifier.db'}", token=TOKEN,
                  oncall_config=tmp_path / "oncall.yaml", poll_interval_s=0.05, retry_base_s=0.05)
    values.update(overrides)
    return NotifierSettings(**values)

# one person, every page to the inbox, whatever its severity (a first-version file: one tier, no escalation)
ONE_DRI = """
targets:
  dri:
    channels:
      - type: inbox
routes: []
default: dri
"""


class NotifierServer:
    """The notifier app served by a real uvicorn on a loopback port, in a thread."""

    def __init__(self, settings: NotifierSettings, oncall_text: str = INBOX_ONLY, **app_options):
        self.settings = settings
        self.url = f"http://127.0.0.1:{settings.port}"
        app = create_app(settings, parse_oncall(oncall_text), **app_options)
        self._server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=settings.port,
                                                     log_level="warning", lifespan="on"))
        self._thread = threading.Thread(target=self._server.run, daemon=True)

    def __enter__(self) -> "NotifierServer":
        self._thread.start()
        deadline = time.monotonic() + 15
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("notifier did not start")
            time.sleep(0.02)
        return self

    def __exit__(self, *exc) -> None:
        self._server.should_exit = True
        self._thread.join(15)


@contextmanager
def run_dir_for(server: NotifierServer, root: Path):
    """A run directory at `root` that points at `server`, as `vigil up` leaves one (its supervisor's lock
    held: the stack is running), so the CLI finds the notifier through `--run-dir`; sets `server.run_dir`."""
    layout = RunLayout(root)
    layout.secrets_dir.mkdir(parents=True)
    layout.token_file.write_text(TOKEN + "\n")
    StackState(supervisor_pid=os.getpid(), port_base=9600, gpu_backend="sim", ready=True,
               components={"notifier": ComponentState(server.url, server.url + "/healthz"),
                           "prometheus": ComponentState("http://127.0.0.1:9", "http://127.0.0.1:9/-/ready")},
               ).write(layout)
    with open(layout.lock_file, "a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        server.run_dir = layout.root
        yield layout.root


def inbox(server: NotifierServer) -> list[dict]:
    """The pages in `server`'s inbox, newest last (`GET /api/v1/inbox`)."""
    return requests.get(f"{server.url}/api/v1/inbox", headers=AUTH, timeout=5).json()["pages"]


def post_alerts(server: NotifierServer, body: dict) -> int:
    """POST `body` to `server`'s Alertmanager webhook as Alertmanager would; the incident it went to."""
    answer = requests.post(f"{server.url}/api/v1/alerts/alertmanager", json=body, headers=AUTH, timeout=10)
    assert answer.status_code == 200, answer.text
    return answer.json()["incident_id"]


def wait_for(check, timeout=15.0, interval=0.05):
    """Poll `check()` until it returns something truthy; return it (fail after `timeout`)."""
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {getattr(check, '__name__', check)}")
        time.sleep(interval)


class RecordingEndpoint:
    """An HTTP endpoint that answers the first `failures` POSTs with 500, then 200, recording bodies."""

    def __init__(self, failures: int = 0):
        self.received: list[dict] = []
        self.failures = failures
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                if endpoint.failures > 0:
                    endpoint.failures -= 1
                    self.send_response(500)
                else:
                    endpoint.received.append(json.loads(body))
                    self.send_response(200)
                self.end_headers()

            def log_message(self, *args):
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> "RecordingEndpoint":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()


def fail_the_next_commit(engine) -> None:
    """The engine's next COMMIT raises `RuntimeError("commit broke")`; the ones after it go through."""
    failing = [True]

    def commit_fails_once(_conn):
        if failing[0]:
            failing[0] = False
            raise RuntimeError("commit broke")

    sa.event.listen(engine, "commit", commit_fails_once)
