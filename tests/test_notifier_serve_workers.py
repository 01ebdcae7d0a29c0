"""`vigil notifier serve --workers N` (notifier/serve_workers.py): several processes on one port and one
database behave as one notifier: each post stored once, each page sent once."""

from __future__ import annotations

import requests

from test_notifier_cli import Served, serve_args
from test_notifier_support import AUTH, free_port, payload, wait_for


def test_two_worker_processes_store_each_post_once_and_page_once(run_dir):  # noqa: F811
    port = free_port()
    with Served(serve_args(run_dir, port, **{"--workers": "2", "--log-level": "warning"}), port) as served:
        answers = [requests.post(served.url + "/api/v1/alerts/alertmanager", json=payload(), headers=AUTH,
                                 timeout=10) for _ in range(6)]  # new connections: both processes answer
        assert [a.status_code for a in answers] == [200] * 6
        assert sorted(a.json()["duplicate"] for a in answers) == [False] + [True] * 5
        pages = wait_for(lambda: requests.get(served.url + "/api/v1/inbox", headers=AUTH, timeout=5).json()["pages"])
        incidents = requests.get(served.url + "/api/v1/incidents", headers=AUTH, timeout=5).json()
    assert len(pages) == 1 and pages[0]["recipient"] == "demo-dri"
    assert len(incidents["incidents"]) == 1
    assert "Traceback" not in served.output
