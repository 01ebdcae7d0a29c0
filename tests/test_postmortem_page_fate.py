"""A page still waiting in the outbox when a postmortem is written after the incident resolved is not
called "not sent" (it may yet go out): its result says when it is due."""

from __future__ import annotations

from datetime import datetime, timezone

from vigil.notifier.postmortem.page_fate import page_results

T0 = datetime(2026, 11, 24, 16, 34, 34, tzinfo=timezone.utc).timestamp()


def parse(text: str | None) -> float | None:
    return None if text is None else datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def at(seconds: float) -> str:
    return datetime.fromtimestamp(T0 + seconds, tz=timezone.utc).isoformat().replace("+00:00", "Z")


def test_a_page_still_waiting_says_when_it_is_due():
    pages = [{"id": 1, "person": "ana", "contact": "phone", "status": "firing", "tier": 0, "state": "sent",
              "created_at": at(0)},
             {"id": 2, "person": "ana", "contact": "sms", "status": "firing", "tier": 0, "state": "pending",
              "created_at": at(0)}]
    events = [{"kind": "page_queued", "at": at(0), "detail": {"person": "ana", "contact": "phone", "status": "firing",
                                                              "tier": 0, "due_in_s": 0}},
              {"kind": "page_queued", "at": at(0), "detail": {"person": "ana", "contact": "sms", "status": "firing",
                                                              "tier": 0, "due_in_s": 60}},
              {"kind": "resolved", "at": at(24), "detail": {}}]
    assert page_results(pages, events, True, parse) == ["sent", "not sent yet: due 16:35:34"]
    assert page_results(pages, events, False, parse) == ["sent", "pending"]


def test_a_fallback_sent_when_it_was_due_is_not_late_and_one_sent_well_after_is():
    """The SMS a policy sends a minute after the call (`due_in_s` 60) is on time when it goes out then;
    lateness counts from when a page was due, not from when it was queued."""
    from vigil.notifier.postmortem.facts import incident_facts

    def incident(sms_sent_after: float) -> dict:
        page = dict(person="ana", status="firing", tier=0, state="sent", created_at=at(0), attempts=[{"ok": True}])
        return {"id": 1, "title": "t", "opened_at": at(0), "status": "resolved", "resolved_at": at(600),
                "pages": [{**page, "contact": "phone", "kind": "phone", "sent_at": at(2)},
                          {**page, "contact": "sms", "kind": "sms", "sent_at": at(sms_sent_after)}],
                "timeline": [{"kind": "page_queued", "at": at(0), "detail": {"person": "ana", "contact": c,
                              "status": "firing", "tier": 0, "due_in_s": due}} for c, due in (("phone", 0), ("sms", 60))]}

    on_time = incident_facts(incident(62), [], T0 + 900)
    assert [(p.contact, p.late, p.delay_s) for p in on_time.pages] == [("phone", False, 2), ("sms", False, 2)]
    assert on_time.troubled_pages == []
    late = incident_facts(incident(60 + 61), [], T0 + 900)
    assert [(p.contact, p.late) for p in late.pages] == [("phone", False), ("sms", True)]
