"""The console's on-call pages through the real notifier app: who each tier pages at a fixed time, the
schedule for the coming weeks with its override, the viewer's time zone, and bad queries as 4xx pages."""

from __future__ import annotations

import pytest

from console_support import log_in
from test_console_oncall_support import CAROL_PASSWORD, NEW_YORK, at, client_at, logged_in, text_of, texts


@pytest.fixture
def client(tmp_path):
    with client_at(tmp_path, at("2026-11-24T10:00")) as test_client:
        logged_in(test_client)
        yield test_client


@pytest.fixture(scope="module")
def reader(tmp_path_factory):
    """One logged-in client for the tests that only read (and leave no zone cookie behind)."""
    with client_at(tmp_path_factory.mktemp("reader"), at("2026-11-24T10:00")) as test_client:
        logged_in(test_client)
        yield test_client


def test_who_is_on_call_now_per_team_and_tier(client):
    page = client.get("/console/oncall")
    assert page.status_code == 200, page.text
    tiers = texts(page.text, css_class="tier")
    gpu = text_of(page.text, "team-gpu")
    assert "GPU infrastructure" in gpu and "policy gpu" in gpu and "times in Europe/Berlin" in gpu
    assert tiers[0].startswith("Tier 1 · DRI Dong Wei (dong) via gpu-primary until Wed 25 Nov 12:00")
    assert "1d02h left" in tiers[0]
    assert tiers[1].startswith("Tier 2 · senior Fei Zhang (fei) always")
    # the platform team's own zone: erin until 08:00 in New York
    assert "erin via platform-days until Tue 24 Nov 08:00" in text_of(page.text, "team-platform")


def test_the_clock_moves_the_page_and_an_override_is_marked(client):
    client.clock.now = at("2026-11-25T15:00")
    logged_in(client)  # a day later: the session has expired
    tier = texts(client.get("/console/oncall").text, css_class="tier")[0]
    assert tier.startswith("Tier 1 · DRI Carol Diaz (carol) override via gpu-primary until Thu 26 Nov 12:00"), tier


def test_on_call_at_another_time_in_the_viewers_chosen_zone(client):
    page = client.get("/console/oncall", params={"at": "2026-11-30T10:00", "tz": "America/New_York"})
    assert page.status_code == 200, page.text
    # 10:00 in New York is 16:00 in Berlin, past Monday's 09:00 handoff: alice's week; shown in New York time
    tier = texts(page.text, css_class="tier")[0]
    assert tier.startswith("Tier 1 · DRI Alice Chen (alice) via gpu-primary until Mon 07 Dec 03:00"), tier
    assert "times in America/New_York" in text_of(page.text, "team-gpu")
    # the choice is kept for the next page
    again = texts(client.get("/console/oncall").text, css_class="tier")[0]
    assert "until Wed 25 Nov 06:00" in again  # now: dong until Berlin noon, 06:00 in New York


def test_the_schedule_for_the_coming_weeks_shows_the_override(client):
    page = client.get("/console/schedules")
    assert page.status_code == 200, page.text
    gpu = text_of(page.text, "schedule-gpu-primary")
    assert "override Carol Diaz 2026-11-25 12:00 → 2026-11-26 12:00 instead of Dong Wei" in gpu
    days = texts(page.text, css_class="day")
    assert len(days) == 2 * 14  # two weeks of each of the two schedules, from today
    assert days[0] == "Tue 24 Nov 00:00–24:00 Dong Wei"
    assert days[1] == "Wed 25 Nov 00:00–12:00 Dong Wei 12:00–24:00 Carol Diaz override"
    assert days[6] == "Mon 30 Nov 00:00–09:00 Dong Wei 09:00–24:00 Alice Chen"
    assert 'class="day today"' in page.text
    assert texts(page.text, css_class="now") == ["00:00–24:00 Dong Wei", "00:00–08:00 erin"]  # the shifts on now


def test_a_schedule_of_one_team_in_another_zone_for_four_weeks(client):
    page = client.get("/console/schedules", params={"team": "gpu", "weeks": "4", "tz": "America/New_York",
                                                    "from": "2026-11-25"})
    assert page.status_code == 200, page.text
    days = texts(page.text, css_class="day")
    assert len(days) == 28 and "schedule-platform-days" not in page.text
    assert days[0] == "Wed 25 Nov 00:00–06:00 Dong Wei 06:00–24:00 Carol Diaz override"
    assert "(the schedule's zone is Europe/Berlin)" in text_of(page.text, "schedule-gpu-primary")
    assert NEW_YORK.key in page.text


def test_a_stretch_with_nobody_on_call_is_shown_as_a_gap(reader):
    page = reader.get("/console/schedules", params={"schedule": "gpu-primary", "from": "2026-11-01", "weeks": "1"})
    days = texts(page.text, css_class="day")
    assert days[:2] == ["Sun 01 Nov 00:00–24:00 nobody on call", "Mon 02 Nov 00:00–09:00 nobody on call 09:00–24:00 Alice Chen"]
    assert texts(page.text, css_class="nobody")[:2] == ["00:00–24:00 nobody on call", "00:00–09:00 nobody on call"]


def test_mine_is_the_logged_in_persons_own_zone(tmp_path):
    with client_at(tmp_path, at("2026-11-24T10:00")) as carol:
        assert log_in(carol, "carol", CAROL_PASSWORD).status_code == 303
        page = carol.get("/console/oncall", params={"tz": "mine"}).text
        assert '<option value="mine" selected>mine (America/New_York)</option>' in page
        assert "until Wed 25 Nov 06:00" in texts(page, css_class="tier")[0]  # Berlin noon, in New York
        days = texts(carol.get("/console/schedules", params={"schedule": "gpu-primary"}).text, css_class="day")
        # today where carol is (04:00 in New York); she may take Dong's shifts and ask cover for her own
        assert days[0] == "Tue 24 Nov 00:00–24:00 Dong Wei take"
        assert days[1] == "Wed 25 Nov 00:00–06:00 Dong Wei take 06:00–24:00 Carol Diaz override cover me"


@pytest.mark.parametrize("path, params, status, reason", [
    ("/console/oncall", {"at": "yesterday-ish"}, 422, "at: 'yesterday-ish' is not a time"),
    ("/console/oncall", {"tz": "Mars/Olympus"}, 422, "unknown time zone 'Mars/Olympus'"),
    ("/console/schedules", {"team": "nobody"}, 404, "unknown team 'nobody' (known: gpu, platform)"),
    ("/console/schedules", {"schedule": "nights"}, 404, "unknown schedule 'nights'"),
    ("/console/schedules", {"weeks": "52"}, 422, "weeks: '52' is not a number of weeks from 1 to 8"),
    ("/console/schedules", {"from": "soon"}, 422, "from: 'soon' is not a time"),
    ("/console/schedules", {"from": "9999-12-31"}, 422, "years 1970 to 2199"),
])
def test_bad_queries_answer_a_page_with_the_reason(reader, path, params, status, reason):
    page = reader.get(path, params=params)
    assert page.status_code == status, page.text
    assert reason in " ".join(texts(page.text, css_class="notice"))


def test_without_a_session_the_pages_send_to_the_login(tmp_path):
    with client_at(tmp_path, at("2026-11-24T10:00")) as anonymous:
        for path in ("/console/oncall", "/console/schedules?team=gpu"):
            answer = anonymous.get(path)
            assert answer.status_code == 303 and answer.headers["location"].startswith("/console/login?next=")
            assert "Dong" not in answer.text
