"""Keep secrets out of the logs: a filter that masks them in every record a handler writes.

Installed by `vigil notifier serve` on the root logger's handlers, where every record ends up
(uvicorn's and apprise's included), so a library that logs a URL or a header carrying the webhook
token, or a database or Alertmanager password, writes `***` instead. Defence in depth: the notifier
itself never logs them. Each secret is masked as written and URL-encoded; secrets shorter than
`MIN_LENGTH` are left alone (masking every `ab` would garble the log and hide nothing).
"""

from __future__ import annotations

import logging
from typing import Iterable
from urllib.parse import quote, quote_plus, urlsplit

MASK = "***"
MIN_LENGTH = 4


class SecretMask(logging.Filter):
    def __init__(self, secrets: Iterable[str | None]):
        super().__init__()
        forms = {form for secret in secrets if secret and len(secret) >= MIN_LENGTH
                 for form in (secret, quote(secret, safe=""), quote_plus(secret))}
        self._forms = sorted(forms, key=len, reverse=True)  # longest first: an encoded form contains the plain one

    def mask(self, text: str) -> str:
        for form in self._forms:
            text = text.replace(form, MASK)
        return text

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # arguments that do not fit the format: leave the error to the handler
            return True
        masked = self.mask(message)
        if masked != message:
            record.msg, record.args = masked, None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = self.mask(record.exc_text)
        if record.stack_info:
            record.stack_info = self.mask(record.stack_info)
        return True


def url_password(url: str | None) -> str | None:
    """The password in `url` (`scheme://user:PASSWORD@host…`), if it has one."""
    return urlsplit(url).password if url else None


def mask_secrets_in_logs(secrets: Iterable[str | None], logger: logging.Logger | None = None) -> SecretMask:
    """Mask `secrets` in everything the handlers of `logger` (default: the root logger) write."""
    mask = SecretMask(secrets)
    for handler in (logger or logging.getLogger()).handlers:
        handler.addFilter(mask)
    return mask
