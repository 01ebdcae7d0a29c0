"""Web Push: pages to the browsers where a person turned them on in the console, with no vendor's app.

The sending half of RFC 8030 (a POST to each subscription's push service endpoint), the payload
encrypted for that browser (RFC 8291, aes128gcm) and signed by this notifier's VAPID key (RFC 8292), all
through `pywebpush`. The console's service worker (`console/static/sw.js`) shows what arrives and opens
the incident on a tap.

- `VapidKey.load_or_create(path)`: the notifier's key pair, a PEM file written once (mode 0600; `vigil up`
  puts it in the run dir, notifiers sharing a database must share it: a browser subscribed under one
  public key is refused a push signed by another). Its public half is the console's
  `applicationServerKey`.
- `WebPushSender`: a `push` contact's sender. It sends to every subscription of the person; the page is
  sent when one push service accepted it (2xx). A subscription its service says is gone (404, 410) is
  deleted. With no subscription left the attempt fails at once without a retry, so the page falls back
  to the person's next contact (`stages.FallbackStage`).
"""

from __future__ import annotations

import base64
import json
import logging
import os
from pathlib import Path

from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from py_vapid import Vapid
from pywebpush import WebPushException, webpush

from vigil.notifier.core.clock import Clock
from vigil.notifier.core.deliveries import Delivery
from vigil.notifier.delivery.channels import SendResult
from vigil.notifier.store.push_subscriptions import PushSubscription, PushSubscriptions

log = logging.getLogger(__name__)

TTL_S = 3600  # a page the push service could not hand to the phone within an hour is dropped by it
TIMEOUT_S = 10.0  # one push service's answer
MAX_BODY = 2000  # characters of the page's text in the payload (a push message carries about 4 KiB)
GONE = (404, 410)  # the push service no longer knows the subscription


class VapidKey:
    """This notifier's VAPID key pair (RFC 8292)."""

    def __init__(self, vapid: Vapid):
        self.vapid = vapid

    @classmethod
    def load_or_create(cls, path: Path) -> "VapidKey":
        """The key in `path`, made there (readable by its owner only) when the file does not exist yet;
        ValueError when the file holds no key."""
        try:
            return cls._read(path)
        except FileNotFoundError:
            pass
        vapid = Vapid()
        vapid.generate_keys()
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        try:  # O_EXCL: of two notifiers starting at once, one writes and the other reads what it wrote
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            return cls._read(path)
        with os.fdopen(fd, "wb") as out:
            out.write(vapid.private_pem())
        return cls(vapid)

    @classmethod
    def _read(cls, path: Path) -> "VapidKey":
        pem = path.read_bytes()
        try:
            return cls(Vapid.from_pem(pem))
        except Exception as exc:  # py_vapid wraps cryptography's errors in its own
            raise ValueError(f"{path} holds no VAPID private key in PEM: {exc}") from None

    @property
    def application_server_key(self) -> str:
        """The public key as browsers take it (`pushManager.subscribe({applicationServerKey})`): the
        uncompressed P-256 point, base64url without padding."""
        raw = self.vapid.public_key.public_bytes(Encoding.X962, PublicFormat.UncompressedPoint)
        return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def push_payload(delivery: Delivery) -> str:
    """What the service worker gets: the page's words and where a tap leads (the incident, Acknowledge first)."""
    body = delivery.body if len(delivery.body) <= MAX_BODY else delivery.body[:MAX_BODY - 1] + "…"
    return json.dumps({"title": delivery.title, "body": body, "status": delivery.page_status,
                       "incident": delivery.incident_id, "tag": f"vigil-incident-{delivery.incident_id}",
                       "url": f"/console/incidents/{delivery.incident_id}"}, ensure_ascii=False)


class WebPushSender:
    """A `push` contact: the page to every browser its person subscribed."""

    def __init__(self, subscriptions: PushSubscriptions, key: VapidKey | None, subject: str, clock: Clock):
        self._subscriptions = subscriptions
        self._key = key
        self._subject = subject
        self._clock = clock

    def send(self, delivery: Delivery) -> SendResult:
        return self.deliver(delivery.target, push_payload(delivery), delivery.page_status == "firing")

    def deliver(self, person: str, payload: str, urgent: bool) -> SendResult:
        """`payload` to every browser `person` subscribed: sent once one push service took it."""
        if self._key is None:
            return SendResult(False, "Web Push is off on this notifier (start it with --vapid-key)", retryable=False)
        subscribed = self._subscriptions.of_person(person)
        if not subscribed:
            return SendResult(False, f"{person} has no browser subscribed to push pages "
                                     "(the console's Push page turns them on)", retryable=False)
        errors, gone = [], 0
        for subscription in subscribed:
            error = self._push(subscription, payload, urgent)
            if error is None:
                self._subscriptions.sent(subscription.id, self._clock())
                return SendResult(True)
            if error == "gone":
                gone += 1
                self._subscriptions.remove(subscription.endpoint)
            else:
                errors.append(error)
        if not errors:  # every subscription was gone: nothing to retry
            return SendResult(False, f"the push service no longer knows {gone} subscription(s) of {person}: "
                                     "removed", retryable=False)
        return SendResult(False, "; ".join(errors)[:500])

    def _push(self, subscription: PushSubscription, payload: str, urgent: bool) -> str | None:
        """None when the push service accepted the message; "gone"; else why it failed."""
        try:
            webpush(subscription.info, data=payload, vapid_private_key=self._key.vapid,
                    vapid_claims={"sub": self._subject}, ttl=TTL_S, timeout=TIMEOUT_S,
                    headers={"Urgency": "high" if urgent else "normal"})
        except WebPushException as exc:
            code = getattr(exc.response, "status_code", None)
            if code in GONE:
                return "gone"
            return f"push service {_host(subscription.endpoint)}: {code or exc.message}"
        except Exception as exc:  # connection refused, a timeout, an endpoint that is no URL
            return f"push service {_host(subscription.endpoint)}: {type(exc).__name__}"
        return None


def _host(endpoint: str) -> str:
    """The push service's host (the rest of an endpoint is a capability, never logged)."""
    return endpoint.split("://", 1)[-1].split("/", 1)[0]
