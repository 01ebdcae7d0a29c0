"""The simulated fleet's scrape endpoints: any number of listeners served by one event-loop thread.

A fleet of 2,500 nodes scraped by Prometheus holds 2,500 kept-alive connections. `MetricsServer` (a
thread per connection) would run 2,500 threads that all wake at each scrape round; here one asyncio
loop reads every connection and a small pool renders the pages (`render_workers` threads), so the
thread count does not grow with the fleet. The replies are `metrics_http.answer`'s, the same as
`vigil exporter gpu` gives: `/metrics` (gzipped when asked), 404 for an unknown `?node=`, 503 for a
node that is down.

    host = MetricsHost()
    listener = host.listen("127.0.0.1", 9835, body)   # body(query) -> bytes
    listener.close()                                  # refuses new connections and cuts the open ones
    host.close()
"""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor
from http import HTTPStatus

from vigil.exporters.metrics_http import Body, Reply, answer, gzip_cache

_MAX_HEAD = 64 * 1024


class Listener:
    """One listening socket of a `MetricsHost`; `close()` also cuts its kept-alive connections, so a
    simulated `node-down` is seen by a scraper that keeps its connection open."""

    def __init__(self, host: MetricsHost, server: asyncio.base_events.Server) -> None:
        self._host, self._server = host, server
        self.connections: set[asyncio.StreamWriter] = set()

    @property
    def port(self) -> int:
        return self._server.sockets[0].getsockname()[1]

    def close(self) -> None:
        if not self._host.running:
            return
        asyncio.run_coroutine_threadsafe(self._close(), self._host.loop).result(timeout=10)

    async def _close(self) -> None:
        self._host._listeners.discard(self)
        self._server.close()
        for writer in list(self.connections):
            writer.transport.abort()
        await self._server.wait_closed()


class MetricsHost:
    """An event loop in one daemon thread that serves `/metrics` listeners."""

    def __init__(self, render_workers: int = 4) -> None:
        self.loop = asyncio.new_event_loop()
        self._pool = ThreadPoolExecutor(max_workers=render_workers, thread_name_prefix="vigil-fleet-render")
        self._listeners: set[Listener] = set()
        self._thread = threading.Thread(target=self.loop.run_forever, name="vigil-fleet-http", daemon=True)
        self._thread.start()

    @property
    def running(self) -> bool:
        return self._thread.is_alive()

    def listen(self, host: str, port: int, body: Body) -> Listener:
        """Start listening now (an `OSError` when the port is taken) and serve `body` there."""
        return asyncio.run_coroutine_threadsafe(self._listen(host, port, body), self.loop).result(timeout=30)

    def close(self) -> None:
        """Close every listener and connection, then stop the loop and the render pool."""
        if self.running:
            for listener in list(self._listeners):
                listener.close()
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(timeout=5)
        if not self.running and not self.loop.is_closed():  # closed here, not by the collector at exit,
            self.loop.close()  # where its self-pipe may already be gone ("Invalid file descriptor: -1")
        self._pool.shutdown(wait=False, cancel_futures=True)

    async def _listen(self, host: str, port: int, body: Body) -> Listener:
        compressed = gzip_cache()
        listener: Listener

        async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            listener.connections.add(writer)
            try:
                await self._connection(reader, writer, body, compressed)
            finally:
                listener.connections.discard(writer)
                writer.close()

        server = await asyncio.start_server(serve, host, port, limit=_MAX_HEAD, backlog=4096)
        listener = Listener(self, server)
        self._listeners.add(listener)
        return listener

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, body: Body,
                          compressed) -> None:
        """HTTP/1.1 requests of one connection, one after the other, until the client hangs up."""
        while True:
            try:
                head = await reader.readuntil(b"\r\n\r\n")
            except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
                return
            request_line, _, header_text = head.decode("latin-1").partition("\r\n")
            headers = {}
            for line in header_text.split("\r\n"):
                name, sep, value = line.partition(":")
                if sep:
                    headers[name.strip().lower()] = value.strip()
            parts = request_line.split()
            if len(parts) != 3:
                await self._write(writer, Reply(HTTPStatus.BAD_REQUEST, b"bad request line\n"), close=True)
                return
            method, path, version = parts
            length = headers.get("content-length", "0") or "0"
            if not length.isdigit() or int(length) > _MAX_HEAD:  # as http.server: 400, no traceback
                await self._write(writer, Reply(HTTPStatus.BAD_REQUEST, b"bad Content-Length\n"), close=True)
                return
            if int(length):
                try:
                    await reader.readexactly(int(length))  # a body nobody asked for: read past it
                except (asyncio.IncompleteReadError, ConnectionError):
                    return
            keep_alive = (headers.get("connection", "").lower() != "close"
                          and (version == "HTTP/1.1" or headers.get("connection", "").lower() == "keep-alive"))
            if method not in ("GET", "HEAD"):
                reply = Reply(HTTPStatus.NOT_IMPLEMENTED, f"unsupported method {method}\n".encode())
            else:
                reply = await self.loop.run_in_executor(
                    self._pool, answer, body, path, "gzip" in headers.get("accept-encoding", ""), compressed)
            await self._write(writer, reply, close=not keep_alive, head_only=method == "HEAD")
            if not keep_alive:
                return

    @staticmethod
    async def _write(writer: asyncio.StreamWriter, reply: Reply, *, close: bool, head_only: bool = False) -> None:
        status = HTTPStatus(reply.status)
        lines = [f"HTTP/1.1 {status.value} {status.phrase}", f"Content-Type: {reply.content_type}",
                 f"Content-Length: {len(reply.data)}"]
        if reply.encoding:
            lines.append(f"Content-Encoding: {reply.encoding}")
        if close:
            lines.append("Connection: close")
        writer.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + (b"" if head_only else reply.data))
        try:
            await writer.drain()
        except ConnectionError:
            pass
