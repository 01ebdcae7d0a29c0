"""The local inbox channel: apprise's JSON service posting to this notifier's own `POST /api/v1/inbox`.

The page travels like any other apprise notification; the delivery id rides along in an
`X-Vigil-Page` header so the inbox can join what arrived with the incident it belongs to. The bearer
token is set on the service object after apprise has parsed its URL, never written into the URL:
apprise writes the URLs it loads into its debug log.
"""

from __future__ import annotations

from urllib.parse import urlsplit

import apprise
from apprise.plugins.base import NotifyBase

from vigil.notifier.deliveries import Delivery
from vigil.notifier.delivery.apprise_sender import AppriseSender
from vigil.notifier.delivery.base import SendResult

INBOX_PATH = "/api/v1/inbox"
PAGE_HEADER = "X-Vigil-Page"


class InboxSender:
    def __init__(self, notifier_url: str, token: str):
        parts = urlsplit(notifier_url)
        self._url = f"{'jsons' if parts.scheme == 'https' else 'json'}://{parts.netloc}{INBOX_PATH}"
        self._token = token

    def service_for(self, delivery_id: int) -> NotifyBase:
        """The apprise JSON service that posts delivery `delivery_id` to the inbox."""
        service = apprise.Apprise.instantiate(f"{self._url}?+{PAGE_HEADER}={delivery_id}")
        service.headers["Authorization"] = f"Bearer {self._token}"
        return service

    def send(self, delivery: Delivery) -> SendResult:
        return AppriseSender(self.service_for(delivery.id)).send(delivery)
