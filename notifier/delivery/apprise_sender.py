"""Send through apprise: one `Apprise` object per recipient, so this delivery's own result is known.

(`Apprise.notify()` is True only when *every* URL it holds succeeded; field notes §10.)
"""

from __future__ import annotations

import logging

import apprise
from apprise.plugins.base import NotifyBase

from vigil.notifier.delivery.base import SendResult
from vigil.notifier.deliveries import Delivery

_NOTIFY_TYPE = {"firing": apprise.NotifyType.FAILURE, "resolved": apprise.NotifyType.SUCCESS}


class AppriseSender:
    """A recipient reached through any apprise URL (mailto://, tgram://, twilio://, json://…), or through
    a ready apprise service object (how the inbox keeps its token out of URLs that apprise logs)."""

    def __init__(self, service: str | NotifyBase):
        self._service = service

    def send(self, delivery: Delivery) -> SendResult:
        notifier = apprise.Apprise()
        if not notifier.add(self._service):
            return SendResult(False, "apprise rejected the URL")
        # apprise reports *why* a send failed only in its log: capture it for the attempt record
        with apprise.LogCapture(level=logging.WARNING) as log:
            ok = notifier.notify(title=delivery.title, body=delivery.body,
                                 notify_type=_NOTIFY_TYPE.get(delivery.page_status, apprise.NotifyType.INFO))
            reason = log.getvalue().strip()
        if ok:
            return SendResult(True)
        return SendResult(False, reason.splitlines()[-1][:500] if reason else "apprise reported failure")
