"""Web Push, the sending half, without the internet: a real notifier pages a person whose first contact
is `push: true`; the browser's side is played by this test, which subscribes through the console as the
person would (logged in, CSRF header, its own P-256 key and auth secret) with a local RFC 8030 push
endpoint. What arrives there must carry a VAPID signature (RFC 8292) by the key the console handed out,
and decrypt with the subscription's keys (RFC 8291, aes128gcm) into the page. A subscription its push
service calls gone is removed, and a person with no subscription answering gets the page on their next
contact at once."""

from __future__ import annotations

import base64
import json
import os
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import http_ece
import pytest
import requests
from argon2 import PasswordHasher
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from test_notifier_support import AUTH, NotifierServer, alert, free_port, make_settings, payload, post_alerts, wait_for

PASSWORD = "ana-password-123"
_HASH = PasswordHasher(time_cost=1, memory_cost=1024, parallelism=1).hash(PASSWORD)
ONCALL = f"""
priorities:
  P1: {{ack_within: 5m, resolve_within: 1h}}
severities: {{critical: P1}}
people:
  ana:
    password_hash: "{_HASH}"
    push: true
    contacts:
      phone: {{inbox: true, kind: phone}}
teams:
  gpu: {{policy: main, members: [ana]}}
policies:
  main:
    tiers:
      - {{notify: [{{person: ana}}], escalate_after: 5m}}
default_policy: main
"""


def b64url(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def unb64url(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class PushService:
    """A local RFC 8030 push service: each POST to /push/NAME is kept; it answers `status[NAME]` (201)."""

    def __init__(self):
        self.received: list[dict] = []
        self.status: dict[str, int] = {}
        service = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                name = self.path.rsplit("/", 1)[-1]
                service.received.append({"name": name, "headers": dict(self.headers), "body": body})
                self.send_response(service.status.get(name, 201))
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()


class Browser:
    """What a browser keeps of one push subscription: its key pair, auth secret and endpoint."""

    def __init__(self, endpoint: str):
        self.endpoint = endpoint
        self.key = ec.generate_private_key(ec.SECP256R1())
        self.auth = os.urandom(16)

    def subscription(self) -> dict:
        public = self.key.public_key().public_bytes(Encoding.X962, PublicFormat.UncompressedPoint)
        return {"endpoint": self.endpoint, "expirationTime": None,
                "keys": {"p256dh": b64url(public), "auth": b64url(self.auth)}, "device": "test phone"}

    def decrypt(self, body: bytes) -> dict:
        return json.loads(http_ece.decrypt(body, private_key=self.key, auth_secret=self.auth, version="aes128gcm"))


def verify_vapid(authorization: str, audience: str) -> tuple[str, dict]:
    """The signing key (k) and the claims of a `vapid t=JWT, k=KEY` header, its ES256 signature checked."""
    found = re.fullmatch(r"vapid t=([^,\s]+),\s*k=(\S+)", authorization)
    assert found, authorization
    token, key = found.groups()
    head, claims, signature = token.split(".")
    public = ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), unb64url(key))
    raw = unb64url(signature)
    der = encode_dss_signature(int.from_bytes(raw[:32], "big"), int.from_bytes(raw[32:], "big"))
    try:
        public.verify(der, f"{head}.{claims}".encode(), ec.ECDSA(hashes.SHA256()))
    except InvalidSignature:
        pytest.fail("the VAPID JWT's signature does not verify with its own key")
    assert json.loads(unb64url(head)) == {"typ": "JWT", "alg": "ES256"}
    decoded = json.loads(unb64url(claims))
    assert decoded["aud"] == audience and decoded["exp"] > time.time()
    return key, decoded


@pytest.fixture
def push_service():
    service = PushService()
    yield service
    service.close()


@pytest.fixture
def notifier(tmp_path):
    settings = make_settings(tmp_path, port=free_port(), vapid_key_file=tmp_path / "secrets" / "vapid.pem",
                             vapid_subject="mailto:oncall@example.org")
    with NotifierServer(settings, ONCALL) as server:
        yield server


def logged_in(server: NotifierServer) -> tuple[requests.Session, str, str]:
    """A console session as ana, the push page's CSRF token and the VAPID key it hands the browser."""
    session = requests.Session()
    login = session.get(f"{server.url}/console/login", timeout=5)
    csrf = re.search(r'name="csrf_token" value="([^"]*)"', login.text).group(1)
    answer = session.post(f"{server.url}/console/login", timeout=5, allow_redirects=False,
                          data={"username": "ana", "password": PASSWORD, "csrf_token": csrf, "next": ""})
    assert answer.status_code == 303, answer.text
    page = session.get(f"{server.url}/console/push", timeout=5)
    button = re.search(r'id="push-on" data-key="([^"]+)" data-csrf="([^"]+)"', page.text)
    assert button, page.text
    return session, button.group(2), button.group(1)


def subscribe(server: NotifierServer, session: requests.Session, csrf: str, browser: Browser) -> requests.Response:
    return session.post(f"{server.url}/console/push/subscribe", json=browser.subscription(),
                        headers={"X-CSRF-Token": csrf}, timeout=5)


def incident(server: NotifierServer, incident_id: int) -> dict:
    return requests.get(f"{server.url}/api/v1/incidents/{incident_id}", headers=AUTH, timeout=5).json()


def test_a_page_reaches_the_subscribed_browser_signed_and_encrypted_for_it(notifier, push_service, tmp_path):
    session, csrf, server_key = logged_in(notifier)
    browser = Browser(f"{push_service.url}/push/phone")
    answer = subscribe(notifier, session, csrf, browser)
    assert answer.status_code == 201, answer.text
    assert (tmp_path / "secrets" / "vapid.pem").stat().st_mode & 0o777 == 0o600

    incident_id = post_alerts(notifier, payload(alert(team="gpu")))
    wait_for(lambda: push_service.received, timeout=15)
    message = push_service.received[0]
    headers = {key.lower(): value for key, value in message["headers"].items()}
    assert headers["content-encoding"] == "aes128gcm" and int(headers["ttl"]) > 0 and headers["urgency"] == "high"
    key, claims = verify_vapid(headers["authorization"], push_service.url)
    assert key == server_key and claims["sub"] == "mailto:oncall@example.org"
    page = browser.decrypt(message["body"])
    assert page["incident"] == incident_id and page["url"] == f"/console/incidents/{incident_id}"
    assert page["status"] == "firing" and "GPU fell off the bus" in page["title"] + page["body"]

    pages = wait_for(lambda: [p for p in incident(notifier, incident_id)["pages"] if p["state"] == "sent"])
    assert [(p["person"], p["kind"]) for p in pages] == [("ana", "push")]
    devices = session.get(f"{notifier.url}/console/push", timeout=5).text
    assert "test phone" in devices and "none yet" not in devices  # its last page is shown

    # the page's resolution follows, at normal urgency
    post_alerts(notifier, payload(alert(status="resolved", team="gpu")))
    wait_for(lambda: len(push_service.received) == 2, timeout=15)
    resolved = push_service.received[1]
    assert {k.lower(): v for k, v in resolved["headers"].items()}["urgency"] == "normal"
    assert browser.decrypt(resolved["body"])["status"] == "resolved"


def test_a_gone_subscription_is_removed_and_the_page_falls_back_to_the_next_contact(notifier, push_service):
    session, csrf, _key = logged_in(notifier)
    assert subscribe(notifier, session, csrf, Browser(f"{push_service.url}/push/old-phone")).status_code == 201
    push_service.status["old-phone"] = 410  # the browser unsubscribed: its push service says so
    incident_id = post_alerts(notifier, payload(alert(team="gpu")))
    sent = wait_for(lambda: [p for p in incident(notifier, incident_id)["pages"] if p["state"] == "sent"])
    assert [(p["person"], p["kind"]) for p in sent] == [("ana", "phone")]
    failed = [p for p in incident(notifier, incident_id)["pages"] if p["kind"] == "push"]
    assert [p["state"] for p in failed] == ["failed"] and len(push_service.received) == 1  # not retried
    assert "test phone" not in session.get(f"{notifier.url}/console/push", timeout=5).text  # removed
    # with no subscription left, the next page goes to the phone at once, nothing pushed
    second = post_alerts(notifier, payload(alert(fingerprint="fp-2", gpu="5", team="gpu"),
                                           group_key='{}:{alertname="GpuLost", gpu="5"}'))
    wait_for(lambda: [p for p in incident(notifier, second)["pages"] if p["state"] == "sent" and p["kind"] == "phone"])
    assert len(push_service.received) == 1


def test_a_test_page_and_removing_a_device_from_the_console(notifier, push_service):
    session, csrf, _key = logged_in(notifier)
    browser = Browser(f"{push_service.url}/push/tablet")
    assert subscribe(notifier, session, csrf, browser).status_code == 201
    page = session.get(f"{notifier.url}/console/push", timeout=5).text
    form_csrf = re.search(r'name="csrf_token" value="([^"]*)"', page).group(1)
    answer = session.post(f"{notifier.url}/console/push/test", data={"csrf_token": form_csrf}, timeout=10)
    assert "Test page sent" in answer.text
    assert browser.decrypt(push_service.received[-1]["body"])["title"] == "vigil: test page"
    session.post(f"{notifier.url}/console/push/remove", timeout=5,
                 data={"csrf_token": form_csrf, "endpoint": browser.endpoint})
    assert "No device yet" in session.get(f"{notifier.url}/console/push", timeout=5).text


@pytest.mark.parametrize("change, status, reason", [
    (lambda s: s.update(endpoint="http://push.example.org/x"), 422, "https://"),
    (lambda s: s["keys"].update(p256dh="AAAA"), 422, "keys.p256dh"),
    (lambda s: s["keys"].update(auth="!!"), 422, "keys.auth"),
    (lambda s: s.pop("keys"), 422, "keys"),
])
def test_a_bad_subscription_is_refused_with_its_reason(notifier, push_service, change, status, reason):
    session, csrf, _key = logged_in(notifier)
    body = Browser(f"{push_service.url}/push/x").subscription()
    change(body)
    answer = session.post(f"{notifier.url}/console/push/subscribe", json=body, headers={"X-CSRF-Token": csrf}, timeout=5)
    assert answer.status_code == status and reason in answer.json()["error"], answer.text


def test_subscribing_needs_the_sessions_csrf_header(notifier, push_service):
    session, _csrf, _key = logged_in(notifier)
    answer = session.post(f"{notifier.url}/console/push/subscribe", timeout=5,
                          json=Browser(f"{push_service.url}/push/x").subscription())
    assert answer.status_code == 403
    assert requests.post(f"{notifier.url}/console/push/subscribe", timeout=5, allow_redirects=False,
                         json=Browser(f"{push_service.url}/push/x").subscription()).status_code == 401
