"""The local inbox channel: apprise's JSON service posting to this notifier's own `POST /api/v1/inbox`.

The page travels like any other apprise notification; the delivery id rides along in an
`X-Vigil-Page` header so the inbox can join what arrived with the incident it belongs to. The bearer
token goes in a header of the service object, never in an apprise URL: apprise writes the URLs it
loads into its debug log.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from apprise.plugins.custom_json import NotifyJSON

from vigil.notifier.delivery.apprise_sender import AppriseSender
from vigil.notifier.delivery.base import SendResult
from vigil.notifier.deliveries import Delivery

INBOX_PATH = "/api/v1/inbox"
PAGE_HEADER = "X-Vigil-Page"


class InboxSender:
    def __init__(self, notifier_url: str, token: str):
        parts = urlsplit(notifier_url)
        self._secure = parts.scheme == "https"
        host = parts.hostname or "127.0.0.1"
        self._host = f"[{host}]" if ":" in host else host
        self._port = parts.port
        self._token = token

    def service_for(self, delivery_id: int) -> NotifyJSON:
        """The apprise JSON service that posts delivery `delivery_id` to the inbox."""
        return NotifyJSON(host=self._host, port=self._port, secure=self._secure, fullpath=INBOX_PATH,
                          headers={"Authorization": f"Bearer {self._token}", PAGE_HEADER: str(delivery_id)})

    def send(self, delivery: Delivery) -> SendResult:
        return AppriseSender(self.service_for(delivery.id)).send(delivery)
