"""The console's demo inbox through the real notifier and its delivery worker: a page sent to the
inbox channel is listed with whom it went to, its text with clickable links, and a link to its
incident's console page."""

from __future__ import annotations

import pytest
from markupsafe import Markup

from test_console_oncall_support import at, client_at, logged_in, text_of, texts
from test_notifier_support import AUTH, alert, payload, wait_for
from vigil.notifier.console.inbox_views import linked

NOW = at("2026-11-24T10:00")


def test_links_in_a_page_are_clickable_and_the_rest_is_escaped():
    shown = linked("Ack: https://vigil.example/l/abc_-.def.\n<b>node</b> & http://x.example/y?a=1&b=2)")
    assert shown == Markup('Ack: <a href="https://vigil.example/l/abc_-.def" rel="noreferrer">'
                           'https://vigil.example/l/abc_-.def</a>.\n&lt;b&gt;node&lt;/b&gt; &amp; '
                           '<a href="http://x.example/y?a=1&amp;b=2" rel="noreferrer">http://x.example/y?a=1&amp;b=2</a>)')
    assert linked("javascript:alert(1) ftp://x") == Markup("javascript:alert(1) ftp://x")


@pytest.fixture
def client(tmp_path):
    with client_at(tmp_path, NOW, run_worker=True) as test_client:
        logged_in(test_client)
        yield test_client


def test_a_page_in_the_inbox_links_to_its_incident(client):
    answer = client.post("/api/v1/alerts/alertmanager", json=payload(alert(node="gpu-node-07")), headers=AUTH)
    assert answer.status_code == 200, answer.text
    [incident] = client.get("/api/v1/incidents", headers=AUTH).json()["incidents"]
    [sent] = wait_for(lambda: client.get("/api/v1/inbox", headers=AUTH).json()["pages"])
    page = client.get("/console/inbox")
    assert page.status_code == 200, page.text
    card = text_of(page.text, f"page-{sent['id']}")
    # tier 1 of the gpu policy is dong's week in gpu-primary
    # a phone page is the short form (no title, one line): the card shows the line as it was sent
    assert sent["title"] == "" and card.startswith("firing to Dong Wei (dong) · phone · tier 1")
    assert sent["body"] in card and len(sent["body"]) <= 160
    assert card.endswith(f"Incident #{incident['id']} →")
    assert f'<a class="incident-link" href="/console/incidents/{incident["id"]}">' in page.text
    one_click = [word for word in sent["body"].split() if "/l/" in word]
    assert one_click and all(f'<a href="{link}" rel="noreferrer">' in page.text for link in one_click)
    opened = client.get(f"/console/incidents/{incident['id']}")
    assert opened.status_code == 200 and f"#{incident['id']}" in opened.text

    assert text_of(client.get("/console/inbox", params={"to": "dong"}).text, f"page-{sent['id']}") == card
    nobody = client.get("/console/inbox", params={"to": "alice"}).text
    assert texts(nobody, css_class="page") == [] and texts(nobody, css_class="empty")[0].startswith("No pages yet.")
    # the live refresh's fragment: the same cards, no page around them
    rows = client.get("/console/inbox/rows", params={"to": "dong"})
    assert rows.status_code == 200 and "<html" not in rows.text
    assert text_of(rows.text, f"page-{sent['id']}") == card
    assert 'data-source="/console/inbox/rows?to=dong"' in client.get("/console/inbox", params={"to": "dong"}).text
    unknown = client.get("/console/inbox", params={"to": "mallory"})
    assert unknown.status_code == 404
    assert texts(unknown.text, css_class="notice") == ["unknown recipient 'mallory': no person of that name in the "
                                                       "on-call file"]


def test_the_inbox_needs_a_session(tmp_path):
    with client_at(tmp_path, NOW) as anonymous:
        answer = anonymous.get("/console/inbox")
        assert answer.status_code == 303 and answer.headers["location"] == "/console/login?next=%2Fconsole%2Finbox"
        rows = anonymous.get("/console/inbox/rows")  # the live refresh sees the redirect and says "logged out"
        assert rows.status_code == 303 and "page-" not in rows.text
