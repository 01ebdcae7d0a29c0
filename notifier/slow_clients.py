"""Nobody holds the notifier open: a deadline on each request's headers and on its body, and a cap on
the connections one client address may hold.

uvicorn has a keep-alive timeout between requests but none while a request arrives: a client that sends
half a header, or a body one byte a minute, holds its connection (and its handler) for ever, and
anyone may do that, since the token is read only once the headers are in. `GuardedHttpTools` is
uvicorn's own httptools protocol with three additions:

- **headers deadline**: from the connection's first byte (or a kept-alive request's first byte), the
  headers must be complete within `header_timeout_s`; else it is answered `408` and closed;
- **body deadline**: once the headers are in, the body must be complete within `body_timeout_s`;
  else the connection is closed (the handler sees the client gone);
- **per-client cap**: one address may hold at most `max_per_client` connections; a connection beyond
  it is answered `429` and closed at once. Alertmanager's posts come from its own address, so a flood
  from elsewhere does not take its share.

`configure(settings)` sets the limits in each serving process (the CLI's, and each `--workers` process).
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

DEFAULT_HEADER_TIMEOUT_S = 10.0
DEFAULT_BODY_TIMEOUT_S = 30.0
DEFAULT_MAX_PER_CLIENT = 100


def _closing_answer(status: str, reason: str) -> bytes:
    """A whole HTTP/1.1 answer that closes the connection, with the API's `{"error": ...}` body."""
    body = json.dumps({"error": reason}).encode()
    return (f"HTTP/1.1 {status}\r\ncontent-type: application/json\r\nconnection: close\r\n"
            f"content-length: {len(body)}\r\n\r\n").encode() + body


_REFUSED = _closing_answer("429 Too Many Requests", "too many connections from this client address")
_TOO_SLOW = _closing_answer("408 Request Timeout", "the request's headers did not arrive before their deadline")


class GuardedHttpTools(HttpToolsProtocol):
    header_timeout_s = DEFAULT_HEADER_TIMEOUT_S
    body_timeout_s = DEFAULT_BODY_TIMEOUT_S
    max_per_client = DEFAULT_MAX_PER_CLIENT
    held: Counter = Counter()  # connections open per client address, in this process

    @classmethod
    def configure(cls, settings) -> None:
        cls.header_timeout_s = settings.header_timeout_s
        cls.body_timeout_s = settings.body_timeout_s
        cls.max_per_client = settings.max_connections_per_client

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._deadline: asyncio.TimerHandle | None = None
        self._counted: str | None = None
        self._headers_in = False
        address = self.client[0] if self.client else None
        if address is not None:
            if self.held[address] >= self.max_per_client:
                transport.write(_REFUSED)
                transport.close()
                return
            self.held[address] += 1
            self._counted = address
        self._arm(self.header_timeout_s, headers=True)  # a connection that sends nothing at all

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._arm(self.header_timeout_s, headers=True)  # from the request's first byte

    def on_headers_complete(self) -> None:
        super().on_headers_complete()
        self._arm(self.body_timeout_s, headers=False)

    def on_message_complete(self) -> None:
        super().on_message_complete()
        self._disarm()  # the handler has it all; between requests uvicorn's keep-alive timeout holds

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        if getattr(self, "_counted", None) is not None:
            self.held[self._counted] -= 1
            if self.held[self._counted] <= 0:
                del self.held[self._counted]
            self._counted = None
        super().connection_lost(exc)

    def _arm(self, seconds: float, headers: bool) -> None:
        self._disarm()
        self._headers_in = not headers
        self._deadline = self.loop.call_later(seconds, self._expired)

    def _disarm(self) -> None:
        deadline = getattr(self, "_deadline", None)
        if deadline is not None:
            deadline.cancel()
            self._deadline = None

    def _expired(self) -> None:
        self._deadline = None
        if self.transport.is_closing():
            return
        if not self._headers_in:  # no handler has the request yet: say why
            self.transport.write(_TOO_SLOW)
        self.transport.close()
