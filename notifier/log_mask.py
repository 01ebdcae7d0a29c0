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


SECRET_PART = 8  # a path segment or query value this long in a channel URL may be a token: masked


def url_secrets(url: str | None) -> list[str]:
    """The parts of a channel URL that may carry a secret (apprise keeps tokens in them: `slack://TokenA/
    TokenB/TokenC`, `tgram://bottoken/chat`, `json://user:pass@host/path?key=…`): all of it after the
    scheme, its password, and every path segment, user name and query value of SECRET_PART characters or
    more — whatever form the library logs it in (its own URL, or the provider's endpoint built from it)."""
    if not url or "://" not in url:
        return []
    rest = url.split("://", 1)[1]
    parts = urlsplit(url)
    try:
        password, user = parts.password, parts.username
    except ValueError:  # a port that is not a number: the rest is still masked whole
        password, user = None, None
    pieces = [segment for segment in parts.path.split("/") if len(segment) >= SECRET_PART]
    pieces += [value for pair in parts.query.split("&") for value in pair.split("=", 1)[1:] if len(value) >= SECRET_PART]
    if user and len(user) >= SECRET_PART:
        pieces.append(user)
    host = parts.netloc.rsplit("@", 1)[-1]
    if len(host) >= SECRET_PART and "." not in host and ":" not in host:
        pieces.append(host)  # `slack://T000/B000/XXX` parses its first token as the host
    return [rest, *([password] if password else []), *pieces]


def notifier_secrets(settings, oncall) -> list[str]:
    """Every secret the notifier holds: its API token, the Alertmanager and database passwords, and the
    secret parts of every channel URL of the on-call file (people's contacts and first-version targets)."""
    urls = [contact.url for person in oncall.people.values() for contact in person.contacts.values()]
    urls += [channel.url for target in oncall.targets.values() for channel in target.channels
             if getattr(channel, "url", None)]
    return [settings.token, url_password(settings.alertmanager_url), url_password(settings.db_url),
            *(secret for url in urls for secret in url_secrets(url))]


def mask_secrets_in_logs(secrets: Iterable[str | None], logger: logging.Logger | None = None) -> SecretMask:
    """Mask `secrets` in everything the handlers of `logger` (default: the root logger) write."""
    mask = SecretMask(secrets)
    for handler in (logger or logging.getLogger()).handlers:
        handler.addFilter(mask)
    return mask
