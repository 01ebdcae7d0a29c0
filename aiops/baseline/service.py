"""The `serve` runtime: keeps a baseline snapshot fresh and publishes it over HTTP.

With a Prometheus URL the service trains at start when the store is missing or older than the refit
interval, then refits on that interval; without one it reloads the store file when `train` rewrote it.
A failed refit keeps the previous model and is retried sooner (after at most a minute).
"""

from __future__ import annotations

import json
import logging
import signal
import threading
import time
from dataclasses import dataclass
from http.server import ThreadingHTTPServer
from pathlib import Path

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from vigil.aiops.baseline.collector import BaselineCollector, BaselineSnapshot
from vigil.aiops.baseline.store import StoreError, load_store, store_path
from vigil.aiops.baseline.train import TrainSettings, history_from_prometheus, save_result, train
from vigil.aiops.history.series import HistoryError
from vigil.aiops.risk import risk_collectors
from vigil.common.http_server import GetAndPostHandler, HangupTolerantServer, http_server

log = logging.getLogger("vigil.aiops.baseline")
RETRY_AFTER_FAILURE_S = 60.0


@dataclass(frozen=True)
class ServiceConfig:
    model_dir: Path
    settings: TrainSettings
    refit_interval: float
    prometheus_url: str | None = None
    selectors: tuple[str, ...] = ()
    sensitivity: float | None = None  # overrides the store's when set
    risk_interval: float = 60.0  # how often failure risk is recomputed from Prometheus
    # where POST /api/v1/ask runs its queries (None: prometheus_url); a Prometheus shard's service answers
    # questions about the whole fleet from the global view (VictoriaMetrics)
    query_url: str | None = None


class BaselineService:
    """Holds the current snapshot; `refit_loop` keeps it fresh until `stop` is set."""

    def __init__(self, config: ServiceConfig):
        self.config = config
        self._snapshot: BaselineSnapshot | None = None
        self._store_mtime: float | None = None

    def current(self) -> BaselineSnapshot | None:
        return self._snapshot

    def load(self) -> bool:
        """Load the store if present (and changed since last load); True when a model is loaded."""
        path = store_path(self.config.model_dir)
        try:
            mtime = path.stat().st_mtime
        except FileNotFoundError:
            return self._snapshot is not None
        if mtime != self._store_mtime:
            store = load_store(self.config.model_dir)
            self._snapshot = BaselineSnapshot.from_store(store, self.config.sensitivity)
            self._store_mtime = mtime
            log.info("loaded %d baselines from %s", len(self._snapshot.entries), path)
        return True

    def refit(self) -> None:
        """Train from Prometheus and swap the new model in (or reload the store without Prometheus)."""
        if not self.config.prometheus_url:
            self.load()
            return
        settings = self.config.settings
        # streamed a batch of series at a time: between refits the service holds models, not histories
        result = train(history_from_prometheus(self.config.prometheus_url, self.config.selectors, settings), settings)
        if not result.entries:
            raise HistoryError(f"no series with enough history for {', '.join(self.config.selectors)}")
        save_result(self.config.model_dir, result, settings, source=self.config.prometheus_url)
        self.load()
        log.info("refit %d series in %.2f s (%s)", len(result.entries), result.fit_seconds, dict(result.by_class()))

    def first_refit_delay(self) -> float:
        """Seconds until the first refit: now when there is no model or it is older than the interval."""
        if not self.config.prometheus_url:
            return self.config.refit_interval
        snapshot = self._snapshot
        if snapshot is None:
            return 0.0
        return max(0.0, snapshot.trained_at + self.config.refit_interval - time.time())

    def refit_loop(self, stop: threading.Event) -> None:
        delay = self.first_refit_delay()
        while not stop.wait(delay):
            try:
                self.refit()
                delay = self.config.refit_interval
            except (HistoryError, StoreError, OSError) as exc:
                delay = min(self.config.refit_interval, RETRY_AFTER_FAILURE_S)
                log.error("refit failed (the previous model, if any, stays served); retrying in %.0f s: %s", delay, exc)
            except Exception:  # a bug must not end refits for good: log it with its traceback, go on
                delay = min(self.config.refit_interval, RETRY_AFTER_FAILURE_S)
                log.exception("refit failed unexpectedly; retrying in %.0f s", delay)


def build_registry(service: BaselineService) -> CollectorRegistry:
    """A registry with the baseline collector and the failure-risk collectors."""
    registry = CollectorRegistry()
    registry.register(BaselineCollector(service.current))
    try:
        for collector in risk_collectors(service.config.model_dir, service.config.prometheus_url, service.config.risk_interval):
            registry.register(collector)
    except Exception as exc:  # another component's failure must not take the baselines down
        log.error("failure-risk collectors could not be added: %s: %s", exc.__class__.__name__, exc)
    return registry


def make_http_server(host: str, port: int, registry: CollectorRegistry, service: BaselineService) -> ThreadingHTTPServer:
    """HTTP server answering /metrics, /healthz (200 once a model is loaded, else 503) and POST /api/v1/ask
    (Text2PromQL, `vigil.aiops.ask.http`)."""

    class Handler(GetAndPostHandler):
        def do_GET(self):  # noqa: N802 (http.server's naming)
            path = self.path.split("?", 1)[0]
            if path == "/metrics":
                self._send(200, generate_latest(registry), CONTENT_TYPE_LATEST)
            elif path == "/healthz":
                ok = service.current() is not None
                self._send(200 if ok else 503, b"ok\n" if ok else b"no baseline model loaded yet\n")
            else:
                self._send(404, b"not found: try /metrics or /healthz\n")

        def do_POST(self):  # noqa: N802 (http.server's naming)
            if self.path.split("?", 1)[0] != "/api/v1/ask":
                self._send(404, b"not found: POST /api/v1/ask\n")
                return
            from vigil.aiops.ask.http import MAX_BODY, handle_ask  # the catalog loads on the first question
            length = self.headers.get("Content-Length")
            if length is None:
                self._send(411, b'{"error": "a POST needs a Content-Length (a chunked body is not read)"}',
                           "application/json")
                return
            if not (length.isascii() and length.isdigit()):  # str.isdigit alone takes '²'
                self._send(400, b'{"error": "a POST needs a numeric Content-Length"}', "application/json")
                return
            if int(length) > MAX_BODY:  # refused before reading: the body may never come
                self._send(413, json.dumps({"error": f"body larger than {MAX_BODY} bytes"}).encode(),
                           "application/json")
                return
            status, reply = handle_ask(self.rfile.read(min(int(length), MAX_BODY + 1)),
                                       service.config.query_url or service.config.prometheus_url)
            self._send(status, json.dumps(reply).encode(), "application/json")

        def _send(self, code: int, body: bytes, content_type: str = "text/plain; charset=utf-8"):
            self.send_response(code)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, fmt, *args):
            log.debug("%s " + fmt, self.address_string(), *args)

    # a probe that gave up waiting (the stack's health check waits half a second) is a debug line, not a traceback
    server = http_server(host, port, Handler, HangupTolerantServer)
    server.daemon_threads = True
    return server


def run_until_stopped(service: BaselineService, server: ThreadingHTTPServer, stop: threading.Event) -> None:
    """Serve and refit until `stop` is set (SIGTERM/SIGINT set it), then shut down cleanly."""
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    http_thread = threading.Thread(target=server.serve_forever, name="baseline-http", daemon=True)
    refit_thread = threading.Thread(target=service.refit_loop, args=(stop,), name="baseline-refit", daemon=True)
    http_thread.start()
    refit_thread.start()
    while not stop.wait(0.5):
        pass
    log.info("stopping")
    server.shutdown()
    server.server_close()
    http_thread.join(timeout=5)
    # a refit in progress is not interrupted mid-write: the store is replaced atomically anyway
