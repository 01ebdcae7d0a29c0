"""A person's contacts: the named ways to reach them (an apprise URL, the notifier's local inbox, or Web
Push to the browsers where they turned on pages in the console: `push: true`).

Each contact has a *kind* (phone, sms, im, email, push, other) that notification rules and the
notifier's timeline speak of. Written in the file or inferred from the URL's scheme: a Twilio URL with
`method=call` is a phone call, Twilio without it and the other SMS gateways are SMS, `mailto://` is
e-mail, chat services are IM, anything else is `other`. An inbox contact (`inbox: true`) has no URL to
infer from and must say its kind; a Web Push contact is of kind `push`. Every URL is checked by apprise
when the file is loaded.
"""

from __future__ import annotations

from typing import Literal

import apprise
from pydantic import BaseModel, ConfigDict, Field, model_validator

# what a user may write; the legacy view of old `targets:` channels adds `inbox` and `apprise`
Kind = Literal["phone", "sms", "im", "email", "push", "other"]
LEGACY_KINDS = ("inbox", "apprise")

SMS_SCHEMES = frozenset({
    "twilio", "sns", "msg91", "clickatell", "bulksms", "bulkvs", "vonage", "nexmo", "d7sms", "smseagle",
    "smseagles", "plivo", "sinch", "kavenegar", "clicksend", "burstsms", "msgbird", "seven", "telnyx", "infobip",
    "smsmgr", "smsmanager", "freemobile", "httpsms", "46elks", "elks", "atalk", "smsc", "serwersms",
    "smstunnel", "voipms", "kudosity", "mobilemessage", "mobilemsg", "telesign", "smpp", "smpps",
})
EMAIL_SCHEMES = frozenset({"mailto", "mailtos", "ses", "sendgrid", "mailgun", "sparkpost", "resend",
                           "smtp2go", "postmark", "brevo", "o365", "azure", "mailersend", "sendpulse"})
IM_SCHEMES = frozenset({
    "slack", "workflow", "workflows", "msteams", "dingtalk", "wecombot", "wecom", "feishu", "lark", "tgram",
    "discord", "matrix", "matrixs", "mmost", "mmosts", "rocket", "rockets", "zulip", "gchat", "wxteams",
    "webex", "signal", "signals", "whatsapp", "line", "qq", "kook", "threema", "xmpp", "xmpps", "cliq",
    "zcliq", "zohocliq", "flock", "ryver", "twist", "guilded", "revolt", "nctalk", "nctalks", "viber",
})
PUSH_SCHEMES = frozenset({"ntfy", "ntfys", "pover", "pbul", "gotify", "gotifys", "fcm", "bark", "barks",
                          "pushme", "pushy", "join", "spush", "onesignal"})


def scheme_of(url: str) -> str:
    """The lower-case scheme of `url` (`twilio` for `twilio://…`)."""
    return url.split("://", 1)[0].strip().lower()


def infer_kind(url: str, service: object) -> str:
    """The kind of the contact reached through `url`, given apprise's parsed `service` object for it.

    The service's own schemes count too, so that a native webhook URL apprise recognises
    (`https://hooks.slack.com/services/…`) gets the kind of its service."""
    schemes = {scheme_of(url)} | _service_schemes(service)
    if "twilio" in schemes and getattr(service, "method", None) == "call":
        return "phone"
    for kind, known in (("sms", SMS_SCHEMES), ("email", EMAIL_SCHEMES), ("im", IM_SCHEMES),
                        ("push", PUSH_SCHEMES)):
        if schemes & known:
            return kind
    return "other"


def _service_schemes(service: object) -> set[str]:
    found = set()
    for attribute in ("protocol", "secure_protocol"):
        value = getattr(service, attribute, None)
        found |= {value} if isinstance(value, str) else set(value or ())
    return {scheme.lower() for scheme in found if isinstance(scheme, str)}


def apprise_service(url: str) -> object:
    """apprise's service object for `url`; ValueError when no plugin accepts it (like legacy channels)."""
    # instantiate() parses the URL with the matching plugin and returns None when none accepts it
    service = apprise.Apprise.instantiate(url, suppress_exceptions=True)
    if service is None:
        raise ValueError("apprise does not understand this URL (unknown scheme or missing parts)")
    return service


class Contact(BaseModel):
    """One way to reach a person: `url` (apprise), the local inbox (`inbox: true`) or Web Push to their
    subscribed browsers (`push: true`, `vigil.notifier.delivery.webpush`), and its `kind`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    url: str | None = None
    inbox: bool = False
    push: bool = False
    kind: Kind | None = None  # None while validating: inferred from `url`
    # pages per minute this contact may carry (phones and SMS gateways limit senders); None: the
    # notifier's default
    max_per_minute: int | None = Field(default=None, ge=1)

    @model_validator(mode="after")
    def _one_way_and_a_kind(self) -> "Contact":
        ways = [way for way, given in (("url", self.url is not None), ("inbox: true", self.inbox),
                                       ("push: true", self.push)) if given]
        if len(ways) > 1:
            raise ValueError(f"a contact is one of `url`, `inbox: true` or `push: true`, not {' and '.join(ways)}")
        if not ways:
            raise ValueError("a contact needs `url` (any apprise URL), `inbox: true` or `push: true` (Web Push)")
        if self.push:
            if self.kind not in (None, "push"):
                raise ValueError(f"a Web Push contact is of kind `push`, not {self.kind!r}")
            object.__setattr__(self, "kind", "push")
        if self.inbox and self.kind is None:
            raise ValueError("an inbox contact needs an explicit `kind` (phone, sms, im, email, push or other)")
        if self.url is not None:
            service = apprise_service(self.url)
            if self.kind is None:
                object.__setattr__(self, "kind", infer_kind(self.url, service))
        return self

    @classmethod
    def legacy(cls, *, url: str | None, inbox: bool, kind: str, max_per_minute: int | None) -> "Contact":
        """A contact standing for an old-style target channel (kind `inbox` or `apprise`), unvalidated:
        the channel itself was validated by its own model."""
        return cls.model_construct(url=url, inbox=inbox, kind=kind, max_per_minute=max_per_minute)
