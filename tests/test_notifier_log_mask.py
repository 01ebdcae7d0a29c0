"""The log filter `vigil notifier serve` installs: secrets never reach a log line, whatever logs them."""

from __future__ import annotations

import io
import logging

from vigil.notifier.log_mask import mask_secrets_in_logs, url_password

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
