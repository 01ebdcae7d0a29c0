"""The console's postmortem route: the logged-in user gets the incident's postmortem as a page, or as a
Markdown / PDF download; the notifier's --prometheus-url reaches it (an unreachable one is said, not
raised); no session, an unknown format or incident are refused."""

from __future__ import annotations

import pytest

from console_support import console_client, log_in, open_incident
from test_notifier_support import free_port


@pytest.fixture
def client(tmp_path, fake_clock):
    nobody_listens = f"http://127.0.0.1:{free_port()}"
    with console_client(tmp_path, fake_clock, prometheus_url=nobody_listens) as test_client:
        yield test_client


def test_the_postmortem_as_page_markdown_and_pdf(client):
    incident = open_incident(client, node="node-7", gpu="3")
    url = f"/console/incidents/{incident}/postmortem"
    assert client.get(url).status_code in (303, 307)  # no session: to the login page
    assert log_in(client).status_code == 303
    page = client.get(url)
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert f"Postmortem: " in page.text and f"(incident #{incident})" in page.text
    assert "Affected GPUs: node-7 GPU 3" in page.text
    assert "No charts: cannot reach Prometheus at http://127.0.0.1:" in page.text
    markdown = client.get(url, params={"format": "md"})
    assert markdown.headers["content-type"].startswith("text/markdown")
    assert markdown.headers["content-disposition"] == f'attachment; filename="incident-{incident}-postmortem.md"'
    assert markdown.text.startswith("# Postmortem: ")
    pdf = client.get(url, params={"format": "pdf"})
    assert pdf.headers["content-type"] == "application/pdf" and pdf.content.startswith(b"%PDF-")


def test_unknown_format_and_incident_are_refused(client):
    incident = open_incident(client)
    log_in(client)
    assert client.get(f"/console/incidents/{incident}/postmortem", params={"format": "docx"}).status_code == 400
    assert client.get(f"/console/incidents/{incident + 1}/postmortem").status_code == 404
