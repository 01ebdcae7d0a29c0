"""The console's maintenance windows through the real notifier app: a window added with the form is
listed (and seen by the API), then ended; bad forms come back 422 with every reason; CSRF and the
session are required; the on-call file's windows are listed beside them."""

from __future__ import annotations

import pytest

from test_console_oncall_support import BERLIN, at, client_at, logged_in, text_of, texts
from test_notifier_support import AUTH
from vigil.notifier.console.maintenance_form import FormProblems, grouped, window_from_form

NOW = at("2026-11-24T10:00")


@pytest.fixture
def client(tmp_path):
    with client_at(tmp_path, NOW) as test_client:
        test_client.csrf = logged_in(test_client)
        yield test_client


@pytest.fixture(scope="module")
def refusing(tmp_path_factory):
    """One logged-in client for the tests where every form is refused (nothing is ever added)."""
    with client_at(tmp_path_factory.mktemp("refusing"), NOW) as test_client:
        test_client.csrf = logged_in(test_client)
        yield test_client


def api_windows(client) -> list[dict]:
    return [w for w in client.get("/api/v1/maintenance?all=true", headers=AUTH).json()["windows"] if w["id"]]


def add(client, **fields):
    return client.post("/console/maintenance", data={"csrf_token": client.csrf, **fields})


# --- the form as data ------------------------------------------------------------------------------
def test_the_form_reads_labels_local_times_and_a_duration():
    window = window_from_form({"match": "node=gpu-node-07, gpu=3\nrack=r1", "starts": "2026-11-24T11:30",
                               "for": "90m", "reason": " firmware "}, BERLIN, NOW, "alice")
    assert window.matchers == {"node": "gpu-node-07", "gpu": "3", "rack": "r1"}
    assert (window.starts_at, window.ends_at) == (at("2026-11-24T11:30"), at("2026-11-24T13:00"))
    assert (window.reason, window.by) == ("firmware", "alice")
    now = window_from_form({"match": "node=n", "ends": "2026-11-24T18:00+00:00"}, BERLIN, NOW, "bob")
    assert (now.starts_at, now.ends_at, now.reason) == (NOW, at("2026-11-24T19:00"), None)


def test_every_mistake_of_a_form_is_named_at_once():
    with pytest.raises(FormProblems) as caught:
        window_from_form({"match": "node", "starts": "junk", "for": ""}, BERLIN, NOW, "alice")
    assert caught.value.problems == ["labels: 'node' is not LABEL=VALUE (like node=gpu-node-07)",
                                     caught.value.problems[1], "end: give an end time or a duration (like 2h), one of them"]
    assert caught.value.problems[1].startswith("start: 'junk' is not a time")


def test_windows_are_grouped_by_where_they_stand():
    def window(ident, starts, ends, active, ended_at=None):
        return dict(id=ident, starts_at=starts, ends_at=ends, active=active, ended_at=ended_at)
    listed = [window(1, "2026-11-24T08:00:00Z", "2026-11-24T12:00:00Z", True),
              window(2, "2026-11-25T08:00:00Z", "2026-11-25T12:00:00Z", False),
              window(3, "2026-11-23T08:00:00Z", "2026-11-23T12:00:00Z", False),
              window(4, "2026-11-24T08:00:00Z", "2026-11-24T12:00:00Z", False, "2026-11-24T08:30:00Z")]
    groups = grouped(listed, NOW)
    assert {name: [w["id"] for w in found] for name, found in groups.items()} == {
        "active": [1], "upcoming": [2], "ended": [4, 3]}


# --- the pages ------------------------------------------------------------------------------------
def test_a_window_added_with_the_form_is_listed_then_ended(client):
    added = add(client, match="node=gpu-node-07 gpu=3", starts="", ends="", **{"for": "2h"}, reason="firmware")
    assert added.status_code == 303, added.text
    [window] = api_windows(client)
    assert window["match"] == {"node": "gpu-node-07", "gpu": "3"} and window["created_by"] == "token"
    assert added.headers["location"] == f"/console/maintenance?created={window['id']}"
    page = client.get(added.headers["location"]).text
    assert f"Maintenance window #{window['id']} added." in texts(page, css_class="notice")
    active = text_of(page, "windows-active")
    assert f"#{window['id']} gpu=3 node=gpu-node-07 Tue 24 Nov 10:00 → Tue 24 Nov 12:00 2h00m left firmware · token End now" in active
    assert "on-call file rack=r9 Tue 24 Nov 08:00 → Tue 24 Nov 20:00" in active  # no button: the file's

    client.clock.now = NOW + 600
    ended = client.post(f"/console/maintenance/{window['id']}/end", data={"csrf_token": client.csrf})
    assert ended.status_code == 303 and ended.headers["location"] == f"/console/maintenance?ended={window['id']}"
    page = client.get(ended.headers["location"]).text
    assert f"#{window['id']}" not in text_of(page, "windows-active")
    assert "Tue 24 Nov 10:00 → Tue 24 Nov 10:10 ended early (planned to Tue 24 Nov 12:00)" in text_of(page, "windows-ended")
    assert api_windows(client)[0]["ended_at"] == "2026-11-24T09:10:00.000Z" and not api_windows(client)[0]["active"]
    again = client.post(f"/console/maintenance/{window['id']}/end", data={"csrf_token": client.csrf})
    assert again.status_code == 409 and "is over already" in " ".join(texts(again.text, css_class="notice"))


def test_an_upcoming_window_in_the_viewers_zone_can_be_cancelled(client):
    added = add(client, match="rack=r2", starts="2026-11-25T02:00", ends="2026-11-25T03:30", tz="America/New_York")
    assert added.status_code == 303, added.text
    [window] = api_windows(client)
    assert window["starts_at"] == "2026-11-25T07:00:00.000Z" and not window["active"]
    page = client.get("/console/maintenance", params={"tz": "America/New_York"}).text
    assert "rack=r2 Wed 25 Nov 02:00 → Wed 25 Nov 03:30 begins in 22h00m" in text_of(page, "windows-upcoming")
    assert "times in America/New_York" in page
    assert client.post(f"/console/maintenance/{window['id']}/end", data={"csrf_token": client.csrf}).status_code == 303
    assert api_windows(client)[0]["ended_at"] is not None


@pytest.mark.parametrize("fields, reasons", [
    ({"match": "", "for": "1h"}, ["labels: give at least one LABEL=VALUE"]),
    ({"match": "node", "for": "1h"}, ["labels: 'node' is not LABEL=VALUE"]),
    ({"match": "node=n"}, ["end: give an end time or a duration"]),
    ({"match": "node=n", "for": "1h", "ends": "2026-11-24T18:00"}, ["end: give an end time or a duration"]),
    ({"match": "node=n", "for": "soon"}, ["duration: ", "'soon' is not a duration"]),
    ({"match": "node=n", "for": "400d"}, ["at most a year"]),
    ({"match": "node=n", "ends": "2026-11-24T09:00"}, ["the window would be over already: the end is in the past"]),
    ({"match": "node=n", "starts": "2026-11-24T12:00", "ends": "2026-11-24T11:00"}, ["the end must be after the start"]),
    ({"match": "x", "starts": "junk", "ends": "later"}, ["labels: 'x'", "start: 'junk' is not a time", "end: 'later'"]),
    ({"match": "node=n", "for": "1h", "tz": "Mars/Olympus"}, ["time zone: unknown time zone 'Mars/Olympus'"]),
])
def test_a_bad_form_comes_back_with_every_reason_and_adds_nothing(refusing, fields, reasons):
    answer = add(refusing, **fields)
    assert answer.status_code == 422, answer.text
    shown = " ".join(texts(answer.text, css_class="notice"))
    assert all(reason in shown for reason in reasons), shown
    assert 'value="' + fields["match"] + '"' in answer.text  # what was typed is kept
    assert api_windows(refusing) == []


def test_posts_without_the_csrf_token_or_a_session_are_refused(client, tmp_path):
    assert add(client, match="node=n", **{"for": "1h"}, csrf_token="forged").status_code == 403
    no_token = client.post("/console/maintenance", data={"match": "node=n", "for": "1h"})
    assert no_token.status_code == 403 and "CSRF" in no_token.text
    assert api_windows(client) == []
    assert add(client, match="node=n", **{"for": "1h"}).status_code == 303
    [window] = api_windows(client)
    assert client.post(f"/console/maintenance/{window['id']}/end", data={}).status_code == 403
    client.cookies.clear()
    assert client.post(f"/console/maintenance/{window['id']}/end", data={"csrf_token": client.csrf}).status_code == 401
    assert add(client, match="node=m", **{"for": "1h"}).status_code == 401
    assert [w["ended_at"] for w in api_windows(client)] == [None]


@pytest.mark.parametrize("window_id", ["999", "abc", "0", str(2**70)])
def test_ending_a_window_that_does_not_exist_is_a_404_page(refusing, window_id):
    answer = refusing.post(f"/console/maintenance/{window_id}/end", data={"csrf_token": refusing.csrf})
    assert answer.status_code == 404 and f"There is no maintenance window #{window_id}." in answer.text
