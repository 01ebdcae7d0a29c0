"""Untrusted JSON bodies: everything that would break a server later is refused up front, with a reason."""

from __future__ import annotations

import json

import pytest

from vigil.common.json_body import BodyRejected, decode_json_body


@pytest.mark.parametrize("raw, reason, words", [
    (b'{"a": "\\ud800"}', "invalid_text", "surrogate"),
    (b'{"labels": {"node": "\\udfff x"}}', "invalid_text", "body.labels.node"),
    (b'{"a\\u0000": 1}', "invalid_text", "NUL"),
    (b'["ok", "nul \\u0000 here"]', "invalid_text", "body[1]"),
    (b"[" * 100_000 + b"]" * 100_000, "too_deep", "nested deeper"),
    (b'{"x":' * 300 + b"1" + b"}" * 300, "too_deep", "nested deeper than 32"),
    (b"NaN", "invalid_json", "NaN"),
    (b'{"v": -Infinity}', "invalid_json", "Infinity"),
    (b"\xff\xfe", "invalid_json", "not UTF-8"),
    (b"{not json", "invalid_json", "not valid JSON"),
])
def test_refused_with_a_reason(raw, reason, words):
    with pytest.raises(BodyRejected) as caught:
        decode_json_body(raw)
    assert caught.value.reason == reason
    assert words in str(caught.value)


def test_ordinary_documents_pass_unchanged():
    doc = {"version": "4", "alerts": [{"labels": {"node": "node-1", "emoji": "🔥"}, "n": 1.5, "ok": True, "none": None}]}
    assert decode_json_body(json.dumps(doc).encode()) == doc
    nested = {"a": {"b": {"c": {"d": [1, [2, [3]]]}}}}
    assert decode_json_body(json.dumps(nested).encode()) == nested


def test_depth_limit_is_exact():
    at_limit = "[" * 32 + "]" * 32
    assert decode_json_body(at_limit.encode(), max_depth=32) == json.loads(at_limit)
    with pytest.raises(BodyRejected):
        decode_json_body(("[" * 33 + "]" * 33).encode(), max_depth=32)
