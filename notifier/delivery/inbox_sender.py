"""The local inbox channel: apprise's json:// to this notifier's own `POST /api/v1/inbox`.

The page travels like any other apprise notification; the delivery id rides along in an
`X-Vigil-Page` header so the inbox can join what arrived with the incident it belongs to.
"""

from __future__ import annotations

from urllib.parse import quote, urlsplit

from vigil.notifier.delivery.apprise_sender import AppriseSender
from vigil.notifier.delivery.base import SendResult
from vigil.notifier.store import Delivery

INBOX_PATH = "/api/v1/inbox"
PAGE_HEADER = "X-Vigil-Page"


class InboxSender:
    def __init__(self, notifier_url: str, token: str):
        parts = urlsplit(notifier_url)
        self._scheme = "jsons" if parts.scheme == "https" else "json"
        self._netloc = parts.netloc
        self._token = token

    def url_for(self, delivery_id: int) -> str:
        auth = quote(f"Bearer {self._token}", safe="")
        return (f"{self._scheme}://{self._netloc}{INBOX_PATH}"
                f"?+Authorization={auth}&+{PAGE_HEADER}={delivery_id}")

    def send(self, delivery: Delivery) -> SendResult:
        return AppriseSender(self.url_for(delivery.id)).send(delivery)
