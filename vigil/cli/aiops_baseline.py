"""`vigil aiops train` and `vigil aiops serve`: dynamic baselines from Prometheus or files."""

from __future__ import annotations

import logging
import threading
from pathlib import Path

import click

from vigil.aiops.baseline.service import BaselineService, ServiceConfig, build_registry, make_http_server, run_until_stopped
from vigil.aiops.baseline.store import StoreError
from vigil.aiops.baseline.train import TrainSettings, history_from_files, history_from_prometheus, save_result
from vigil.aiops.baseline.train import train as train_baselines
from vigil.aiops.history.series import HistoryError
from vigil.common.click_types import Duration, HostPort, HttpUrl
from vigil.common.hostport import http_url


def _sensitivity(ctx, param, value):
    if value is not None and not 0 < value <= 100:
        raise click.BadParameter("must be above 0 and at most 100 (1 = default width, 2 = half as wide)")
    return value


DURATION = Duration(positive=True)


@click.command("train")
@click.option("--prometheus", "--prometheus-url", "prometheus_url", type=HttpUrl(), metavar="URL", help="Prometheus to read history from (query_range).")
@click.option("--match", "selectors", multiple=True, metavar="SELECTOR", help="Series selector, repeatable (e.g. vigil_gpu_utilization_ratio).")
@click.option("--lookback", type=DURATION, default="14d", show_default=True, help="History to learn from.")
@click.option("--step", type=DURATION, default="5m", show_default=True, help="Grid step the series are resampled to.")
@click.option("--max-gap", type=DURATION, default="15m", show_default=True, help="Longest gap bridged by interpolation; longer gaps stay gaps.")
@click.option("--input", "inputs", multiple=True, type=click.Path(dir_okay=False, path_type=Path), help="CSV or Parquet history file instead of Prometheus (repeatable).")
@click.option("--model-dir", required=True, type=click.Path(file_okay=False, path_type=Path), help="Where the model store (baselines.json) is written.")
@click.option("--sensitivity", type=float, default=1.0, show_default=True, callback=_sensitivity, help="Band width factor: higher = narrower bands, more alerts.")
def train(prometheus_url, selectors, lookback, step, max_gap, inputs, model_dir, sensitivity):
    """Learn a baseline per series and write the model store to --model-dir."""
    from tqdm import tqdm

    if bool(prometheus_url) == bool(inputs):
        raise click.UsageError("give either --prometheus-url with --match, or --input FILE")
    if prometheus_url and not selectors:
        raise click.UsageError("--prometheus-url needs at least one --match SELECTOR")
    settings = TrainSettings(step=step, max_gap=max_gap, sensitivity=sensitivity, lookback=lookback)
    try:
        if prometheus_url:  # listed now, read a batch at a time while fitting
            raw = history_from_prometheus(prometheus_url, selectors, settings)
            total, source = raw.count, prometheus_url
        else:
            raw = history_from_files(inputs)
            total, source = len(raw), ", ".join(str(p) for p in inputs)
        if total != 0:
            with tqdm(total=total, desc="reading and fitting baselines", unit="series") as bar:
                result = train_baselines(raw, settings, on_series=lambda: bar.update())
    except HistoryError as exc:
        raise click.ClickException(str(exc)) from None
    if total == 0 or result.read == 0:
        raise click.ClickException(f"no series found in {source} for {' '.join(selectors) or 'the input'}")
    for reason in result.skipped:
        click.echo(f"skipped: {reason}", err=True)
    if not result.entries:
        raise click.ClickException("no series had enough history to learn a baseline; nothing written")
    path = save_result(model_dir, result, settings, source)
    click.echo(f"{len(result.entries)} baselines in {result.fit_seconds:.2f} s -> {path}")
    click.echo(f"{'class':<12} {'series':>6} {'in band (training)':>19}")
    counts = result.by_class()
    for kind in sorted(counts):
        cover = [e["training_in_band"] for e in result.entries if e["class"] == kind]
        click.echo(f"{kind:<12} {counts[kind]:>6} {100 * sum(cover) / len(cover):>18.1f}%")


@click.command("serve")
@click.option("--listen", default="127.0.0.1:9605", show_default=True, type=HostPort(default_host="0.0.0.0"),
              help="HOST:PORT to serve /metrics and /healthz on (:PORT: every interface).")
@click.option("--model-dir", required=True, type=click.Path(file_okay=False, path_type=Path), help="Model store directory.")
@click.option("--prometheus", "--prometheus-url", "prometheus_url", type=HttpUrl(), metavar="URL", help="Train at start (when no model) and refit from this Prometheus.")
@click.option("--match", "selectors", multiple=True, metavar="SELECTOR", help="Series selector to refit, repeatable.")
@click.option("--refit-interval", type=DURATION, default="1h", show_default=True, help="How often to refit (or reload the store without Prometheus).")
@click.option("--lookback", type=DURATION, default="14d", show_default=True, help="History each refit learns from.")
@click.option("--step", type=DURATION, default="5m", show_default=True, help="Grid step for refits.")
@click.option("--max-gap", type=DURATION, default="15m", show_default=True, help="Longest gap bridged by interpolation.")
@click.option("--sensitivity", type=float, default=None, callback=_sensitivity, help="Override the store's sensitivity.")
@click.option("--risk-interval", type=DURATION, default="60s", show_default=True, help="How often failure risk is recomputed from Prometheus.")
@click.option("--query-url", metavar="URL",
              help="Prometheus-compatible API that POST /api/v1/ask runs its queries on (a global view such as "
                   "VictoriaMetrics when --prometheus-url is one shard).  [default: --prometheus-url]")
@click.option("--log-level", type=click.Choice(["debug", "info", "warning", "error"]), default="info", show_default=True)
def serve(listen, model_dir, prometheus_url, selectors, refit_interval, lookback, step, max_gap, sensitivity, risk_interval,
          query_url, log_level):
    """Serve the baseline bands for now on /metrics, refitting on a schedule."""
    logging.basicConfig(level=log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if prometheus_url and not selectors:
        raise click.UsageError("--prometheus-url needs at least one --match SELECTOR")
    settings = TrainSettings(step=step, max_gap=max_gap, sensitivity=sensitivity or 1.0, lookback=lookback)
    config = ServiceConfig(model_dir, settings, refit_interval, prometheus_url, tuple(selectors), sensitivity, risk_interval,
                           query_url)
    service = BaselineService(config)
    try:
        loaded = service.load()
    except StoreError as exc:
        raise click.ClickException(str(exc)) from None
    if not loaded and not prometheus_url:
        raise click.ClickException(
            f"no model store in {model_dir}: run `vigil aiops train --model-dir {model_dir} …` first, "
            "or give --prometheus-url and --match to train at start"
        )
    host, port = listen
    try:
        server = make_http_server(host, port, build_registry(service), service)
    except OSError as exc:
        raise click.ClickException(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    click.echo(f"serving baselines on {http_url(host, server.server_port, '/metrics')}", err=True)
    run_until_stopped(service, server, threading.Event())

