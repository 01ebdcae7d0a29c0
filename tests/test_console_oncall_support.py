"""Helpers of the console's on-call, schedule, maintenance and inbox tests (no tests here): an on-call
file with two teams in different zones, a weekly rota with an override and a daily rota; a notifier app
on it with a settable clock, logged in with the bearer token."""

from __future__ import annotations

from datetime import datetime
from html.parser import HTMLParser
from zoneinfo import ZoneInfo

from fastapi.testclient import TestClient

from sim_clock import FakeClock
from console_support import csrf_of, log_in
from vigil.notifier.app import create_app
from vigil.notifier.console.passwords import hash_password
from vigil.oncall.loader import parse_oncall
from test_notifier_support import TOKEN, make_settings

BERLIN = ZoneInfo("Europe/Berlin")
NEW_YORK = ZoneInfo("America/New_York")

# gpu-primary, weekly from Monday 2026-11-02 09:00 Berlin: alice, dong, alice, dong (week of the 23rd),
# carol overriding from Wednesday 25th 12:00 to Thursday 26th 12:00. platform-days, daily from
# 2026-11-02 08:00 New York: bob on even days since then, erin on odd ones.
CAROL_PASSWORD = "carol-console-password"
ONCALL = """
timezone: Europe/Berlin
people:
  alice: {name: Alice Chen, contacts: {phone: {inbox: true, kind: phone}}}
  dong: {name: Dong Wei, contacts: {phone: {inbox: true, kind: phone}}}
  carol: {name: Carol Diaz, timezone: America/New_York, password_hash: "CAROL_HASH",
          contacts: {phone: {inbox: true, kind: phone}}}
  fei: {name: Fei Zhang, contacts: {phone: {inbox: true, kind: phone}}}
  bob: {contacts: {phone: {inbox: true, kind: phone}}}
  erin: {contacts: {phone: {inbox: true, kind: phone}}}
teams:
  gpu: {name: GPU infrastructure, policy: gpu, members: [alice, dong, carol, fei]}
  platform: {timezone: America/New_York, policy: platform, members: [bob, erin]}
schedules:
  gpu-primary:
    layers:
      - {name: weekly rota, rotation: weekly, handoff: "2026-11-02T09:00", people: [alice, dong]}
    overrides:
      - {person: carol, start: "2026-11-25T12:00", end: "2026-11-26T12:00"}
  platform-days:
    timezone: America/New_York
    layers:
      - {name: daily rota, rotation: daily, handoff: "2026-11-02T08:00", people: [bob, erin]}
policies:
  gpu:
    tiers:
      - {name: DRI, notify: [{schedule: gpu-primary}]}
      - {name: senior, notify: [{person: fei}]}
  platform:
    tiers:
      - {name: on call, notify: [{schedule: platform-days}]}
default_policy: gpu
maintenance:
  - {match: {rack: r9}, start: "2026-11-24T08:00", end: "2026-11-24T20:00", reason: rack move}
""".replace("CAROL_HASH", hash_password(CAROL_PASSWORD))


def config():
    return parse_oncall(ONCALL)


def at(text: str, zone: ZoneInfo = BERLIN) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=zone).timestamp()


def client_at(tmp_path, now: float, run_worker: bool = False) -> TestClient:
    """A TestClient on the notifier (its delivery worker running if `run_worker`) with the clock at
    `now`, not logged in; `client.clock.now` moves the clock."""
    clock = FakeClock(now)
    client = TestClient(create_app(make_settings(tmp_path), config(), run_worker=run_worker, clock=clock),
                        follow_redirects=False)
    client.clock = clock
    return client


def logged_in(client: TestClient) -> str:
    """Log `client` in with the bearer token; the session's CSRF token (read from a console page)."""
    answer = log_in(client, "token", TOKEN)
    assert answer.status_code == 303, answer.text
    return csrf_of(client.get("/console/oncall").text)


class _Texts(HTMLParser):
    """The visible text of every element with an id or a class, as a user reads it (spaces collapsed)."""

    VOID = {"br", "img", "input", "meta", "link", "hr", "source", "wbr"}

    def __init__(self):
        super().__init__()
        self.open: list[tuple[str, str | None, list[str], list[str]]] = []  # (tag, id, classes, text)
        self.found: list[tuple[str | None, list[str], str]] = []

    def handle_starttag(self, tag, attrs):
        if tag not in self.VOID:
            named = dict(attrs)
            self.open.append((tag, named.get("id"), (named.get("class") or "").split(), []))

    def handle_endtag(self, tag):
        while self.open:
            opened, element_id, classes, text = self.open.pop()
            self.found.append((element_id, classes, " ".join("".join(text).split())))
            if self.open:
                self.open[-1][3].append(" " + "".join(text) + " ")
            if opened == tag:
                break

    def handle_data(self, data):
        if self.open:
            self.open[-1][3].append(data)


def texts(html: str, element_id: str | None = None, css_class: str | None = None) -> list[str]:
    """The texts of the elements with `element_id` or `css_class`, in document order of their ends."""
    parser = _Texts()
    parser.feed(html)
    return [text for found_id, classes, text in parser.found
            if (element_id is not None and found_id == element_id) or (css_class is not None and css_class in classes)]


def text_of(html: str, element_id: str) -> str:
    found = texts(html, element_id=element_id)
    assert len(found) == 1, f"{len(found)} elements with id {element_id!r}"
    return found[0]
