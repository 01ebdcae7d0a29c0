"""Signed one-click links on their own: genuine ones verify, forged, tampered and expired ones do not."""

from __future__ import annotations

import base64
import json

import pytest

from sim_clock import SIM_NOW
from vigil.notifier.links import LINK_PATH, Link, LinkRefused, link_key, page_links, sign, sign_short, verify
from test_notifier_support import TOKEN, make_settings

T0 = SIM_NOW
KEY = link_key(TOKEN)


def refusal(key: bytes, token: str, now: float = T0) -> LinkRefused:
    with pytest.raises(LinkRefused) as refused:
        verify(key, token, now)
    return refused.value


def test_a_genuine_link_says_which_incident_and_action_until_it_expires():
    token = sign(KEY, 42, "ack", T0 + 600, nonce="n-1")
    assert verify(KEY, token, T0) == Link(42, "ack", T0 + 600, "n-1")
    assert verify(KEY, token, T0 + 599).action == "ack"
    expired = refusal(KEY, token, T0 + 600)
    assert expired.status == 410 and "expired" in str(expired)


def test_each_link_has_its_own_nonce():
    assert verify(KEY, sign(KEY, 1, "ack", T0 + 1), T0).nonce != verify(KEY, sign(KEY, 1, "ack", T0 + 1), T0).nonce


def test_a_link_signed_with_another_key_is_forged():
    other = sign(link_key("another-token-0123456789abcdef"), 42, "resolve", T0 + 600)
    forged = refusal(KEY, other)
    assert forged.status == 403 and "signature does not match" in str(forged)


def test_changing_the_incident_or_the_action_breaks_the_signature():
    payload, _, signature = sign(KEY, 42, "open", T0 + 600).partition(".")
    claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    for change in ({"a": "resolve"}, {"i": 43}, {"e": int(T0 + 10**6)}):
        altered = base64.urlsafe_b64encode(json.dumps({**claims, **change}).encode()).decode().rstrip("=")
        assert refusal(KEY, f"{altered}.{signature}").status == 403


@pytest.mark.parametrize("token", ["", "nodot", ".", "abc.", ".abc", "a.b.c", "é.é", "x" * 600 + ".y",
                                   "eyJ9.!!!!", "%%%.%%%"])
def test_garbage_is_refused_as_forged_never_an_exception(token):
    assert refusal(KEY, token).status == 403


def test_a_signed_token_with_an_unknown_action_is_refused():
    with pytest.raises(ValueError, match="unknown link action"):
        sign(KEY, 1, "delete", T0 + 1)
    payload = base64.urlsafe_b64encode(b'{"a":"delete","e":1900000000,"i":1,"n":"x"}').decode().rstrip("=")
    signature = sign(KEY, 1, "ack", T0).partition(".")[2]  # even with a valid-looking signature part
    assert refusal(KEY, f"{payload}.{signature}").status == 403


def test_page_links_are_the_four_actions_under_the_public_url_then_the_short_ack(tmp_path):
    settings = make_settings(tmp_path, public_url="https://vigil.example.com/")
    urls = page_links(settings, 7, T0, ttl_s=3600)
    prefix = "https://vigil.example.com" + LINK_PATH
    assert all(url.startswith(prefix) for url in urls)
    links = [verify(KEY, url.removeprefix(prefix), T0) for url in urls]
    assert [(link.incident_id, link.action, link.expires_at) for link in links] == [
        (7, "ack", T0 + 3600), (7, "resolve", T0 + 3600), (7, "open", T0 + 3600), (7, "noisy", T0 + 3600),
        (7, "ack", T0 + 3600)]
    assert len(urls[-1].removeprefix(prefix)) <= 30  # what an SMS has room for
    assert TOKEN not in "".join(urls)  # the webhook token never travels in a page


@pytest.mark.parametrize("incident_id", [1, 300, 2**31, 2**63 - 1])
def test_a_short_token_says_what_the_long_one_says_in_a_fraction_of_the_room(incident_id):
    token = sign_short(KEY, incident_id, "ack", T0 + 60)
    link = verify(KEY, token, T0)
    assert (link.incident_id, link.action, link.expires_at) == (incident_id, "ack", T0 + 60)
    assert len(token) <= 36 and "." not in token
    assert link.nonce.startswith(f"s{incident_id}:")  # one incident's uses never meet another's
    assert verify(KEY, sign_short(KEY, incident_id, "ack", T0 + 60), T0).nonce != link.nonce


def test_a_short_token_altered_forged_or_expired_is_refused():
    token = sign_short(KEY, 5, "ack", T0 + 60)
    raw = bytearray(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
    raw[0] = 6  # another incident, the MAC unchanged
    altered = base64.urlsafe_b64encode(bytes(raw)).decode().rstrip("=")
    assert refusal(KEY, altered).status == 403
    assert refusal(link_key("another notifier's token"), token).status == 403
    assert refusal(KEY, "AAAA").status == 403  # too short to hold a MAC
    assert refusal(KEY, token, now=T0 + 60).status == 410


@pytest.mark.parametrize("form", [sign, sign_short])
def test_a_link_names_the_person_its_page_went_to_and_older_links_name_nobody(form):
    token = form(KEY, 7, "ack", T0 + 60, person="ana")
    assert verify(KEY, token, T0).person == "ana"
    assert verify(KEY, form(KEY, 7, "ack", T0 + 60), T0).person is None  # a link made before names nobody
    if form is sign_short:  # the name costs its bytes only: still fit for a 160-character page
        assert len(token) <= 40
    raw = bytearray(base64.urlsafe_b64decode(token.split(".")[0] + "=" * (-len(token.split(".")[0]) % 4)))
    raw[-10 if form is sign_short else raw.index(b"ana")] ^= 1  # another name, same signature
    forged = base64.urlsafe_b64encode(bytes(raw)).decode().rstrip("=")
    assert refusal(KEY, forged if form is sign_short else f"{forged}.{token.split('.')[1]}").status == 403

