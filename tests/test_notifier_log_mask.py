"""The log filter `vigil notifier serve` installs: secrets never reach a log line, whatever logs them."""

from __future__ import annotations

import io
import logging
from pathlib import Path

from vigil.notifier.log_mask import SecretMask, mask_secrets_in_logs, url_password

TOKEN = "s3cret-token-0123456789"


def logged(*secrets, emit) -> str:
    logger = logging.getLogger("test-log-mask")
    logger.propagate = False
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    logger.handlers = [handler]
    mask_secrets_in_logs(secrets, logger)
    try:
        emit(logger)
    finally:
        logger.handlers = []
    return stream.getvalue()


def test_a_secret_in_a_message_its_arguments_or_a_url_encoding_of_it_is_masked():
    text = logged(TOKEN, emit=lambda log: (
        log.warning("token %s in args", TOKEN),
        log.warning(f"Loaded URL json://h/?+Authorization=Bearer%20{TOKEN}&x=1"),
        log.warning("headers: %r", {"Authorization": f"Bearer {TOKEN}"}),
    ))
    assert TOKEN not in text
    assert text.splitlines() == ["token *** in args", "Loaded URL json://h/?+Authorization=Bearer%20***&x=1",
                                 "headers: {'Authorization': 'Bearer ***'}"]


def test_a_secret_in_a_traceback_is_masked():
    def fail(log):
        try:
            raise ConnectionError(f"cannot reach http://user:{TOKEN}@db")
        except ConnectionError:
            log.exception("store down")
    text = logged(TOKEN, emit=fail)
    assert "ConnectionError: cannot reach http://user:***@db" in text and TOKEN not in text


def test_url_passwords_are_secrets_too_and_short_ones_are_left_alone():
    assert url_password("postgresql://vigil:pg-pass-1@db:5432/vigil") == "pg-pass-1"
    assert url_password("http://127.0.0.1:9093") is None and url_password(None) is None
    text = logged("pg-pass-1", "ab", None, emit=lambda log: log.warning("pg-pass-1 about ab"))
    assert text == "*** about ab\n"


def test_every_channel_urls_secret_parts_are_masked_at_debug_level(caplog):
    """apprise at debug level writes a Slack channel's webhook path (its tokens) in full, in the provider's
    form, not the apprise URL's: each token of every contact URL is masked wherever it appears."""
    import apprise

    from vigil.notifier.log_mask import notifier_secrets
    from vigil.oncall.loader import parse_oncall
    from test_notifier_support import make_settings

    tokens = ("T0ABCDEFGH", "B0ABCDEFGH", "Xsecretwebhookpart1234")
    oncall = parse_oncall(f"""
people:
  ana:
    contacts:
      slack: {{url: "slack://{'/'.join(tokens)}/#oncall"}}
      hook: {{url: "json://bot:hookpassword@127.0.0.1:9/notify?token=querysecret123"}}
""")
    mask = SecretMask(notifier_secrets(make_settings(Path("/nonexistent")), oncall))
    logger = logging.getLogger("apprise")
    logger.addFilter(mask)
    try:
        with caplog.at_level(logging.DEBUG, logger="apprise"):
            notifier = apprise.Apprise()
            notifier.add(f"slack://{'/'.join(tokens)}/#oncall")
            notifier.notify(title="t", body="b")  # no network: it fails, and says so at debug level
            logger.debug("Slack POST URL: https://hooks.slack.com/services/%s", "/".join(tokens))
            logger.debug("JSON POST to http://bot:hookpassword@127.0.0.1:9/notify?token=querysecret123")
    finally:
        logger.removeFilter(mask)
    text = "\n".join(record.getMessage() for record in caplog.records)
    assert "hooks.slack.com/services/***" in text
    for secret in (*tokens, "hookpassword", "querysecret123"):
        assert secret not in text
