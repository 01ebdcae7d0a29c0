"""Contacts: the shipped example reaches a person on every channel family, each URL checked by apprise,
each contact's kind inferred from its URL; and the mistakes a user makes with contacts, by line."""

from __future__ import annotations

from pathlib import Path

import apprise
import pytest

from vigil.oncall import OncallConfigError, load_oncall, parse_oncall

EXAMPLE = Path(__file__).resolve().parents[1] / "oncall" / "examples" / "contacts.yaml"


def test_the_shipped_example_validates_every_contact_and_infers_its_kind():
    config = load_oncall(EXAMPLE)
    kinds = {(person, name): contact.kind for person, known in config.people.items()
             for name, contact in known.contacts.items()}
    assert kinds == {
        ("alice", "phone"): "phone", ("alice", "sms"): "sms",  # Twilio: a voice call, and SMS
        ("bob", "teams"): "im",  # Microsoft Teams through Power Automate workflows
        ("carol", "slack"): "im", ("dong", "dingtalk"): "im", ("wen", "wecom"): "im",
        ("fei", "feishu"): "im", ("fei", "lark"): "im", ("tom", "telegram"): "im",
        ("erin", "email"): "email",
        ("demo", "phone"): "phone", ("demo", "im"): "im",  # the local inbox under channel names
    }
    services = {}
    for person in config.people.values():
        for contact in person.contacts.values():
            if contact.url is not None:
                service = apprise.Apprise.instantiate(contact.url, suppress_exceptions=True)
                assert service is not None, contact.url
                services[contact.url.split("://")[0]] = type(service).__name__
    assert services == {"twilio": "NotifyTwilio", "workflows": "NotifyWorkflows", "slack": "NotifySlack",
                        "dingtalk": "NotifyDingTalk", "wecombot": "NotifyWeComBot", "feishu": "NotifyFeishu",
                        "lark": "NotifyLark", "tgram": "NotifyTelegram", "mailtos": "NotifyEmail"}


def _person(contacts: str) -> str:
    return f"people:\n  p:\n    contacts:\n{contacts}"


@pytest.mark.parametrize("url, kind", [
    ("twilio://AC0123456789abcdef0123456789abcdef:0123456789abcdef0123456789abcdef@+15550001000/+15550002000?method=call",
     "phone"),
    ("twilio://AC0123456789abcdef0123456789abcdef:0123456789abcdef0123456789abcdef@+15550001000/+15550002000", "sms"),
    ("vonage://0123abcd:0123456789abcdef@15550001000/15550002000", "sms"),
    ("mailto://user:pass@example.com", "email"),
    ("https://hooks.slack.com/services/T01ABCDEFGH/B01ABCDEFGH/abcdefghijklmnopqrstuvwx", "im"),  # native URL
    ("discord://4174216298/JHMHI8qBe7bk2ZwO5U711o3dV_js", "im"),
    ("ntfy://vigil-pages", "push"),
    ("json://127.0.0.1:9/hook", "other"),
])
def test_the_kind_is_inferred_from_the_url(url, kind):
    config = parse_oncall(_person(f'      c: {{url: "{url}"}}\n'))
    assert config.people["p"].contacts["c"].kind == kind


def test_a_written_kind_wins_over_the_inferred_one():
    config = parse_oncall(_person('      c: {url: "json://127.0.0.1:9/pager", kind: phone}\n'))
    assert config.people["p"].contacts["c"].kind == "phone"


def test_contact_mistakes_are_reported_each_at_its_line():
    text = _person("""\
      phone: {url: "twilio://nonsense"}
      pager: {inbox: true}
      both: {inbox: true, url: "slack://T1/B1/C1", kind: im}
      nothing: {kind: im}
      odd: {url: "mailto://user:pass@example.com", kind: pigeon}
      app: {push: true, kind: sms}
""")
    with pytest.raises(OncallConfigError) as caught:
        parse_oncall(text, "oncall.yaml")
    assert caught.value.problems[:4] == [
        "oncall.yaml:4: people.p.contacts.phone: apprise does not understand this URL "
        "(unknown scheme or missing parts)",
        "oncall.yaml:5: people.p.contacts.pager: an inbox contact needs an explicit `kind` "
        "(phone, sms, im, email, push or other)",
        "oncall.yaml:6: people.p.contacts.both: a contact is one of `url`, `inbox: true` or `push: true`, "
        "not url and inbox: true",
        "oncall.yaml:7: people.p.contacts.nothing: a contact needs `url` (any apprise URL), `inbox: true` or "
        "`push: true` (Web Push)",
    ]
    assert caught.value.problems[4].startswith("oncall.yaml:8: people.p.contacts.odd.kind: Input should be 'phone'")
    assert caught.value.problems[5] == "oncall.yaml:9: people.p.contacts.app: a Web Push contact is of kind `push`, not 'sms'"
    assert len(caught.value.problems) == 6


def test_push_on_a_person_makes_web_push_their_first_contact():
    """`push: true` on a person: a contact `push` first, their written contacts its fallbacks in order;
    written as a contact instead, it keeps its place."""
    first = parse_oncall(_person('      phone: {inbox: true, kind: phone}\n').replace("  p:\n", "  p:\n    push: true\n", 1))
    assert [(name, c.kind, c.push) for name, c in first.people["p"].contacts.items()] == [
        ("push", "push", True), ("phone", "phone", False)]
    placed = parse_oncall(_person('      phone: {inbox: true, kind: phone}\n      app: {push: true}\n'))
    assert [(name, c.kind) for name, c in placed.people["p"].contacts.items()] == [("phone", "phone"), ("app", "push")]
