"""The webhook's body parser (`notifier/ingest/parse.py: webhook_of`) lets pydantic parse plain JSON text
itself; every body must still get exactly what the long way (`decode_json_body`, then validating the
objects, then the checks on arrival) gives: the same notification, or the same refusal with the same status, reason and message."""

from __future__ import annotations

import json

import pytest

from vigil.notifier.ingest import parse
from vigil.notifier.ingest.parse import Rejected, webhook_of
from vigil.notifier.core.models import WebhookPayload
from test_notifier_support import alert, payload


def the_long_way(raw: bytes):
    try:
        return parse._as_received(parse.model_of(WebhookPayload, parse._decoded(raw))).model_dump_json()
    except Rejected as exc:
        return exc.status, exc.reason, exc.message


def answer(raw: bytes):
    try:
        return webhook_of(raw).model_dump_json()
    except Rejected as exc:
        return exc.status, exc.reason, exc.message


def nested(levels: int):
    value = 1
    for _ in range(levels):
        value = [value]
    return value


def changed(path: tuple, value) -> bytes:
    doc = payload(alert(), alert("fp-2", node="node-2"))
    target = doc
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return json.dumps(doc, ensure_ascii=False).encode()


FIELDS = [("version",), ("groupKey",), ("truncatedAlerts",), ("status",), ("commonLabels",), ("alerts",),
          ("alerts", 0, "status"), ("alerts", 0, "labels", "gpu"), ("alerts", 0, "startsAt"),
          ("alerts", 0, "endsAt"), ("alerts", 0, "fingerprint"), ("extra",), ("alerts", 1, "extra")]
VALUES = [None, True, 4, "4", 4.0, 1.5, -1, 2**31, 2**70, 1e400, "", "x", [], {}, {"a": 1}, ["x"], "résolu 中文",
          "2026-11-21T20:00:00Z", "2026-11-21T20:00:00", "0001-01-01T00:00:00+01:00", nested(40)]
ODD_BODIES = [
    b"", b"{", b"\xff\xfe", b"[]", b"null", b'{"version": "4"}', b"\xef\xbb\xbf{}",
    changed(("extra",), "NaN").replace(b'"NaN"', b"NaN"),
    changed(("extra",), "Infinity").replace(b'"Infinity"', b"-Infinity"),
    changed(("commonAnnotations", "summary"), "a\u0000b"),
    json.dumps(payload(alert())).replace("GPU fell", "\\ud800 fell").encode(),
    json.dumps(payload(alert())).replace("GPU fell", "GPU\\u0041 fell").encode(),
    json.dumps(payload(alert())).replace("GPU fell", "GPU\tfell").encode(),
    json.dumps(payload(*[alert(f"fp-{i}") for i in range(40)])).encode(),  # more brackets than the depth limit
    changed(("commonAnnotations", "summary"), "value NaN"),
]


@pytest.mark.parametrize("path", FIELDS, ids=lambda p: ".".join(map(str, p)))
def test_a_changed_field_gets_what_the_long_way_gives(path):
    for value in VALUES:
        raw = changed(path, value)
        assert answer(raw) == the_long_way(raw), value


@pytest.mark.parametrize("raw", ODD_BODIES, ids=range(len(ODD_BODIES)))
def test_odd_bodies_get_what_the_long_way_gives(raw):
    assert answer(raw) == the_long_way(raw)


def test_a_plain_notification_skips_the_long_way(monkeypatch):
    raw = json.dumps(payload(alert(), alert("fp-2"))).encode()
    expected = the_long_way(raw)

    def refused(_raw):
        raise AssertionError("a plain notification went the long way")

    monkeypatch.setattr(parse, "_decoded", refused)
    assert answer(raw) == expected
