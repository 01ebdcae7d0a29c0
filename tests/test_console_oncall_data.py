"""The console's on-call data, pure with a fixed moment: who each tier pages now and how, and a
schedule cut into local days with its override marked."""

from __future__ import annotations

from datetime import date

from vigil.notifier.console.oncall_data import now_on_call, schedule_view
from test_console_oncall_support import BERLIN, NEW_YORK, at, config


def people(team, tier_index):
    return [(p.key, p.schedule, p.until, p.override) for p in team.tiers[tier_index].people]


def test_each_tier_has_the_person_its_schedule_or_entry_names_at_that_moment():
    gpu, platform = now_on_call(config(), at("2026-11-24T10:00"))
    assert (gpu.team, gpu.title, gpu.policy, gpu.zone) == ("gpu", "GPU infrastructure", "gpu", "Europe/Berlin")
    assert [tier.name for tier in gpu.tiers] == ["DRI", "senior"]
    # dong's week runs to the next Monday, but carol's override takes over on Wednesday at noon
    assert people(gpu, 0) == [("dong", "gpu-primary", at("2026-11-25T12:00"), False)]
    assert gpu.tiers[0].people[0].name == "Dong Wei"
    assert people(gpu, 1) == [("fei", None, None, False)]
    # 04:00 in New York: the daily shift that began yesterday at 08:00 there (erin's) until 08:00
    assert platform.zone == "America/New_York" and platform.title == "platform"
    assert people(platform, 0) == [("erin", "platform-days", at("2026-11-24T08:00", NEW_YORK), False)]


def test_an_override_shows_who_covers_and_until_when():
    gpu, platform = now_on_call(config(), at("2026-11-25T15:00"))
    assert people(gpu, 0) == [("carol", "gpu-primary", at("2026-11-26T12:00"), True)]
    # 09:00 in New York on the 25th: the shift of day 23 since the handoff (odd: erin's), to 08:00 tomorrow
    assert people(platform, 0) == [("erin", "platform-days", at("2026-11-26T08:00", NEW_YORK), False)]
    assert now_on_call(config(), at("2026-11-26T12:00"))[0].tiers[0].people[0].key == "dong"


def test_a_schedule_over_days_marks_the_override_and_whom_it_replaces():
    view = schedule_view(config(), "gpu-primary", date(2026, 11, 23), 7)
    assert (view.zone, view.own_zone, view.layers) == ("Europe/Berlin", "Europe/Berlin", ("weekly rota",))
    assert [d.day for d in view.days] == [date(2026, 11, 23 + offset) for offset in range(7)]

    def day(index):
        return [(p.person, p.begins, p.ends, p.override) for p in view.days[index].pieces]

    assert day(0) == [("alice", "00:00", "09:00", False), ("dong", "09:00", "24:00", False)]
    assert day(1) == [("dong", "00:00", "24:00", False)]
    assert day(2) == [("dong", "00:00", "12:00", False), ("carol", "12:00", "24:00", True)]
    assert day(3) == [("carol", "00:00", "12:00", True), ("dong", "12:00", "24:00", False)]
    carol = view.days[2].pieces[1]
    assert carol.replaces == ("Dong Wei",) and carol.source == "override" and carol.name == "Carol Diaz"
    assert view.days[0].pieces[0].source == "weekly rota"
    [override] = view.overrides
    assert (override.person, override.begins, override.ends) == ("carol", "2026-11-25 12:00", "2026-11-26 12:00")


def test_a_schedule_in_the_viewers_zone_cuts_days_at_their_midnight():
    view = schedule_view(config(), "gpu-primary", date(2026, 11, 25), 2, NEW_YORK)
    assert (view.zone, view.own_zone) == ("America/New_York", "Europe/Berlin")
    # Berlin noon is 06:00 in New York
    assert [(p.person, p.begins, p.ends) for p in view.days[0].pieces] == [("dong", "00:00", "06:00"),
                                                                         ("carol", "06:00", "24:00")]
    assert view.overrides[0].begins == "2026-11-25 06:00"


def test_days_follow_the_clock_across_a_dst_change():
    # Berlin leaves summer time on 2026-10-25: that day lasts 25 hours, still one day from 00:00 to 24:00
    view = schedule_view(config(), "gpu-primary", date(2026, 10, 24), 3, BERLIN)
    assert [d.day for d in view.days] == [date(2026, 10, 24), date(2026, 10, 25), date(2026, 10, 26)]
    # the rota begins on 2026-11-02: nobody on call before, shown as a gap (the 25-hour day's runs 00:00-24:00)
    assert [[(p.person, p.name, p.begins, p.ends, p.source) for p in d.pieces] for d in view.days] == [
        [("", "nobody on call", "00:00", "24:00", "gap")]] * 3
    assert view.days[1].pieces[0].end - view.days[1].pieces[0].start == 25 * 3600
    first = schedule_view(config(), "gpu-primary", date(2026, 11, 2), 1, BERLIN).days[0].pieces
    assert [(p.person, p.begins, p.ends) for p in first] == [("", "00:00", "09:00"), ("alice", "09:00", "24:00")]
