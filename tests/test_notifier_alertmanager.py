"""End to end with the real Alertmanager: it posts to the notifier, which pages the inbox."""

from __future__ import annotations

import shutil
import subprocess
import time
from datetime import datetime, timedelta, timezone

import pytest
import requests

from test_notifier_support import AUTH, TOKEN, NotifierServer, free_port, make_settings, payload, wait_for

HOOK = "/api/v1/alerts/alertmanager"

ALERTMANAGER = "/usr/bin/prometheus-alertmanager"
pytestmark = [pytest.mark.e2e,
              pytest.mark.skipif(not shutil.which(ALERTMANAGER), reason="prometheus-alertmanager not installed")]

AM_CONFIG = """
route:
  receiver: vigil
  group_by: [alertname]
  group_wait: 1s
  group_interval: 1s
  repeat_interval: 1h
receivers:
  - name: vigil
    webhook_configs:
      - url: http://127.0.0.1:{port}/api/v1/alerts/alertmanager
        send_resolved: true
        http_config:
          authorization:
            credentials: {token}
"""


class Alertmanager:
    def __init__(self, tmp_path, webhook_port: int):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        config = tmp_path / "alertmanager.yml"
        config.write_text(AM_CONFIG.format(port=webhook_port, token=TOKEN))
        self._args = [ALERTMANAGER, f"--config.file={config}", f"--storage.path={tmp_path / 'am-data'}",
                      f"--web.listen-address=127.0.0.1:{self.port}", "--cluster.listen-address=",
                      "--log.level=warn"]
        self._log = open(tmp_path / "alertmanager.log", "wb")

    def __enter__(self) -> "Alertmanager":
        self._process = subprocess.Popen(self._args, stdout=self._log, stderr=subprocess.STDOUT)
        wait_for(self._ready, timeout=20)
        return self

    def _ready(self) -> bool:
        try:
            return requests.get(self.url + "/-/ready", timeout=1).status_code == 200
        except requests.ConnectionError:
            return False

    def __exit__(self, *exc) -> None:
        self._process.terminate()
        self._process.wait(10)
        self._log.close()

    def post_alert(self, labels: dict, ends_at: datetime | None = None, starts_at: datetime | None = None):
        alert = {"labels": labels, "annotations": {"summary": "XID 79: GPU fell off the bus"},
                 "generatorURL": "http://prometheus/graph"}
        if starts_at:
            alert["startsAt"] = starts_at.isoformat().replace("+00:00", "Z")
        if ends_at:
            alert["endsAt"] = ends_at.isoformat().replace("+00:00", "Z")
        requests.post(self.url + "/api/v2/alerts", json=[alert], timeout=5).raise_for_status()


LABELS = {"alertname": "GpuFellOffBus", "node": "node-3", "gpu": "5", "severity": "critical"}


def get(server, what: str) -> list[dict]:
    response = requests.get(f"{server.url}/api/v1/{what}", headers=AUTH, timeout=5)
    response.raise_for_status()
    return response.json()["pages" if what == "inbox" else what]


def test_alert_fires_and_resolves_through_alertmanager_into_the_inbox(tmp_path):
    port = free_port()
    with NotifierServer(make_settings(tmp_path, port=port)) as server, Alertmanager(tmp_path, port) as am:
        started = datetime.now(timezone.utc) - timedelta(seconds=5)
        am.post_alert(LABELS, starts_at=started)
        [firing] = wait_for(lambda: get(server, "inbox"), timeout=20)
        assert firing["status"] == "firing"
        assert {k: firing["labels"][k] for k in LABELS} == LABELS
        [incident] = get(server, "incidents")
        assert incident["status"] == "firing" and incident["group_key"].endswith('{alertname="GpuFellOffBus"}')

        am.post_alert(LABELS, starts_at=started, ends_at=datetime.now(timezone.utc) - timedelta(seconds=1))
        pages = wait_for(lambda: (p := get(server, "inbox")) and len(p) >= 2 and p, timeout=20)
        assert [p["status"] for p in pages] == ["firing", "resolved"]
        assert all(p["incident_id"] == incident["id"] for p in pages)
        [incident] = get(server, "incidents")
        assert incident["status"] == "resolved" and incident["resolved_at"] is not None
        # Alertmanager re-sends nothing new after the resolution: still one incident, two pages
        time.sleep(2.5)
        assert len(get(server, "inbox")) == 2 and len(get(server, "incidents")) == 1


def test_a_notifier_that_was_down_when_the_alert_fired_still_pages(tmp_path):
    port = free_port()
    with Alertmanager(tmp_path, port) as am:
        am.post_alert(LABELS)
        time.sleep(3)  # Alertmanager tries the webhook, finds nobody, keeps the notification unsent
        with NotifierServer(make_settings(tmp_path, port=port)) as server:
            [page] = wait_for(lambda: get(server, "inbox"), timeout=20)
            assert page["status"] == "firing" and page["labels"]["node"] == "node-3"


def test_reconcile_at_start_pages_once_when_alertmanager_retries_too(tmp_path):
    port = free_port()
    with Alertmanager(tmp_path, port) as am:
        am.post_alert(LABELS)
        time.sleep(2)
        settings = make_settings(tmp_path, port=port, alertmanager_url=am.url)
        with NotifierServer(settings) as server:
            # both reconciliation and Alertmanager's retried notification find the alert; whichever is
            # first opens the incident and the other joins it
            wait_for(lambda: any(not n["group_key"].startswith("reconciled:")
                                 for n in get(server, "notifications")), timeout=20)
            time.sleep(1.5)
            [incident] = get(server, "incidents")
            assert incident["status"] == "firing" and not incident["group_key"].startswith("reconciled:")
            [page] = get(server, "inbox")
            assert page["status"] == "firing"


def test_reconcile_opens_an_incident_alertmanager_never_delivered_and_its_webhook_adopts_it(tmp_path):
    with Alertmanager(tmp_path, webhook_port=free_port()) as am:  # its webhook goes nowhere
        am.post_alert(LABELS)
        settings = make_settings(tmp_path, port=free_port(), alertmanager_url=am.url)
        with NotifierServer(settings) as server:
            [page] = wait_for(lambda: get(server, "inbox"), timeout=20)
            [incident] = get(server, "incidents")
            assert incident["group_key"].startswith("reconciled:vigil:")
            assert incident["title"] == "GpuFellOffBus node=node-3 gpu=5 — XID 79: GPU fell off the bus"
            assert page["status"] == "firing" and page["incident_id"] == incident["id"]
            assert {k: page["labels"][k] for k in LABELS} == LABELS
            metrics = requests.get(server.url + "/metrics", timeout=5).text
            assert "vigil_notifier_reconciled_alerts_total 1.0" in metrics

            # later Alertmanager's own notification for the group arrives (nanosecond times, real group key)
            [held] = requests.get(am.url + "/api/v2/alerts", timeout=5).json()
            webhook = payload({"status": "firing", "labels": held["labels"], "annotations": held["annotations"],
                               "startsAt": held["startsAt"].replace("Z", "456789Z"),
                               "endsAt": "0001-01-01T00:00:00Z", "generatorURL": "", "fingerprint":
                               held["fingerprint"]}, group_key='{}:{alertname="GpuFellOffBus"}')
            answer = requests.post(server.url + HOOK, json=webhook, headers=AUTH, timeout=5).json()
            assert answer["incident_id"] == incident["id"] and not answer["duplicate"]
            [adopted] = get(server, "incidents")
            assert adopted["group_key"] == '{}:{alertname="GpuFellOffBus"}'
            time.sleep(0.5)
            assert len(get(server, "inbox")) == 1  # no second page for the same firing


def test_an_alertmanager_that_is_down_does_not_stop_the_notifier(tmp_path):
    settings = make_settings(tmp_path, port=free_port(), alertmanager_url=f"http://127.0.0.1:{free_port()}")
    with NotifierServer(settings) as server:
        assert requests.get(server.url + "/healthz", timeout=5).json() == {"ok": True}
        assert get(server, "incidents") == []
