"""The console's on-call health page shows the seeded week's figures (`test_analytics.py`, computed by
hand there), with its charts as inline SVG; logged in as console users are, refused without a session."""

from __future__ import annotations

import re

import pytest
from fastapi.testclient import TestClient

from vigil.notifier.app import create_app
from vigil.notifier.console.passwords import hash_password
from vigil.oncall.loader import parse_oncall
from console_support import PASSWORDS, log_in
from test_analytics import END, ONCALL, seed
from test_notifier_support import make_settings

PERIOD = {"from": "2026-11-23T00:00Z", "to": "2026-11-30T00:00Z"}


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("console")
    seed(tmp_path).close()
    # alice may log in to the console
    oncall = ONCALL.replace("alice: {timezone: Asia/Tokyo,",
                            f'alice: {{timezone: Asia/Tokyo, password_hash: "{hash_password(PASSWORDS["alice"])}",')
    app = create_app(make_settings(tmp_path), parse_oncall(oncall), run_worker=False, clock=lambda: END)
    with TestClient(app, follow_redirects=False) as client:
        assert log_in(client, "alice").status_code == 303
        yield client


def row(html: str, attribute: str, name: str) -> list[str]:
    """The cells of the table row marked `attribute="name"`: their data-value when they have one, else text."""
    found = re.search(rf'<tr {attribute}="{re.escape(name)}">(.*?)</tr>', html, re.S)
    assert found, f"no row {attribute}={name}"
    cells = re.findall(r'<t[dh][^>]*?(?: data-value="([^"]*)")?>(.*?)</t[dh]>', found.group(1), re.S)
    return [value if value else text.strip() for value, text in cells]


def test_the_page_shows_the_hand_computed_figures(client):
    page = client.get("/console/reports", params=PERIOD)
    assert page.status_code == 200
    html = page.text
    # name, incidents, paged, acked share, MTTA, MTTR, escalated, SLA ack, SLA resolve, pages, off-hours, acted on
    assert row(html, "data-group", "all") == ["all", "5", "5", "0.6", "813.3333333333334", "1860.0", "0.4", "0.75",
                                              "1.0", "8", "6", "0.4"]
    assert row(html, "data-group", "team gpu")[1:8] == ["4", "4", "0.5", "270.0", "1680.0", "0.5", "1.0"]
    assert row(html, "data-group", "team net")[7:9] == ["0.0", "–"]  # ack target breached; no resolve target
    assert row(html, "data-group", "priority P3")[4:6] == ["1900.0", "1320.0"]
    # person, pages, off-hours, by channel, acks, MTTA, notes, resolved, escalated
    assert row(html, "data-person", "alice") == ["alice", "4", "3", "phone 4", "1", "120.0", "1", "1", "1"]
    assert row(html, "data-person", "carol")[:4] == ["carol", "2", "1", "email 2"]
    assert row(html, "data-alert", "GpuThermal") == ["GpuThermal", "2", "3", "0.0", "0.0"]
    assert "4m" in html and ">team gpu<" in html  # MTTA 270 s shown as the console shows durations


def test_the_charts_are_inline_svg_with_the_same_figures(client):
    html = client.get("/console/reports", params=PERIOD).text
    assert html.count('<svg xmlns="http://www.w3.org/2000/svg" class="chart"') == 3
    assert "<script" not in html.split("<main>")[1] and "http://" not in html.replace("http://www.w3.org/2000/svg", "")
    assert "<title>alice: 3 pages outside working hours</title>" in html
    assert "<title>alice: 1 pages in working hours</title>" in html
    assert "<title>GpuLost: 3 pages, 2 incidents, acted on 50%</title>" in html
    assert "<title>gpu: MTTA 4.5 min</title>" in html and "<title>net: MTTR 40.0 min</title>" in html


def test_a_team_narrows_it_and_bad_input_is_a_page_with_the_reason(client):
    net = client.get("/console/reports", params={**PERIOD, "team": "net"}).text
    assert 'data-person="carol"' in net and 'data-person="alice"' not in net
    bad = client.get("/console/reports", params={"from": "last tuesday"})
    assert bad.status_code == 422 and "is not a time" in bad.text
    backwards = client.get("/console/reports", params={"from": PERIOD["to"], "to": PERIOD["from"]})
    assert backwards.status_code == 422 and "must be after" in backwards.text
    assert client.get("/console/reports", params={"team": "nope"}).status_code == 404


def test_without_a_session_the_page_asks_to_log_in(client):
    anonymous = TestClient(client.app, follow_redirects=False)
    answer = anonymous.get("/console/reports", params=PERIOD)
    assert answer.status_code == 303 and answer.headers["location"].startswith("/console/login")
