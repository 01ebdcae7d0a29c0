"""`vigil aiops train-disk`, `calibrate-risk` and `suggest-inhibitions` (thin: parse, validate, call aiops)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import click

from vigil.common.click_types import Duration, HttpUrl


@click.command("train-disk")
@click.option("--input", "input_path", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Labelled daily SMART history (CSV; Backblaze columns accepted).")
@click.option("--simulate", is_flag=True, help="Train on a simulated fleet instead of --input.")
@click.option("--disks", type=click.IntRange(min=100), default=3000, show_default=True, help="Simulated fleet size.")
@click.option("--days", type=click.IntRange(min=31), default=120, show_default=True, help="Simulated days of history.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the simulation and the split.")
@click.option("--horizon-days", type=click.IntRange(min=1), default=20, show_default=True,
              help="A failing disk's last N days are the positives; alarms count as detections in this window.")
@click.option("--false-alarm-rate", type=click.FloatRange(min=0, max=0.5, min_open=True), default=0.001,
              show_default=True, help="Target share of healthy disk-days that alarm (sets the threshold).")
@click.option("--model-dir", type=click.Path(file_okay=False, path_type=Path), required=True,
              help="Where disk_model.joblib and disk_model.json are written.")
@click.option("--threads", type=click.IntRange(min=1), default=1, show_default=True,
              help="OpenMP threads for training (more only helps on idle cores).")
@click.option("--write-history", type=click.Path(dir_okay=False, path_type=Path),
              help="With --simulate: also write the simulated history as CSV (re-usable with --input).")
@click.option("--json", "as_json", is_flag=True, help="Print the metrics as JSON.")
def train_disk(input_path, simulate, disks, days, seed, horizon_days, false_alarm_rate, model_dir, threads,
               write_history, as_json):
    """Train the disk failure model and report detection at a fixed false-alarm rate."""
    if bool(input_path) == simulate:
        raise click.UsageError("give exactly one of --input HISTORY.csv or --simulate")
    if write_history and not simulate:
        raise click.UsageError("--write-history only goes with --simulate")
    from vigil.aiops.disk.history_io import HistoryError, read_history, write_history as write_csv
    from vigil.aiops.disk.model import TrainingConfig, save_model, train_disk_model
    from vigil.aiops.disk.simulate import FleetSpec, simulate_fleet

    if simulate:
        history = simulate_fleet(FleetSpec(disks=disks, days=days, seed=seed))
        if write_history:
            write_csv(history, write_history)
    else:
        try:
            history = read_history(input_path)
        except HistoryError as exc:
            raise click.ClickException(str(exc)) from exc
    config = TrainingConfig(horizon_days=horizon_days, false_alarm_rate=false_alarm_rate, seed=seed, threads=threads)
    started = time.monotonic()
    try:
        model, evaluation = train_disk_model(history, config)
    except ValueError as exc:
        raise click.ClickException(f"cannot train: {exc}") from exc
    save_model(model, model_dir)
    metrics = model.metadata["metrics"]
    if as_json:
        click.echo(json.dumps(metrics, indent=2, sort_keys=True))
        return
    days = lambda value: "n/a" if value is None else f"{value:.1f} days"  # noqa: E731
    click.echo(f"trained on {history['disk'].nunique()} disks in {time.monotonic() - started:.1f} s; model in {model_dir}")
    click.echo(f"held-out disks: {evaluation.test_disks} ({evaluation.test_failing_disks} failing); "
               f"alarm = score > {model.threshold:.4g} (set for {false_alarm_rate:.2%} false alarms per "
               f"disk-day on validation disks)")
    click.echo(f"detection rate: {evaluation.detection_rate:.1%}, median lead time {days(evaluation.median_lead_days)}")
    click.echo(f"false alarms: {evaluation.false_alarm_rate_disk_days:.3%} of healthy disk-days, "
               f"{evaluation.false_alarm_rate_disks:.2%} of healthy disks")
    click.echo(f"detection rate at exactly {false_alarm_rate:.2%} false alarms per disk-day on the test disks: "
               f"{evaluation.detection_rate_at_test_far:.1%}, median lead time "
               f"{days(evaluation.median_lead_days_at_test_far)}")
    click.echo(f"ROC AUC (disk-days): {evaluation.roc_auc_disk_days:.3f}")
    for pattern, rate in sorted(evaluation.detection_by_pattern.items()):
        click.echo(f"  detected {pattern}: {rate:.1%}")


MIN_HELD_OUT_FAILURES = 10  # fewer failing units than this: the figures and weights mean nothing


@click.command("calibrate-risk")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the simulated populations and the split.")
@click.option("--days", type=click.IntRange(min=31), default=90, show_default=True, help="Days of simulated life history.")
@click.option("--gpu-nodes", type=click.IntRange(min=16), default=2048, show_default=True,
              help="Simulated GPU nodes (8 GPUs each; 2048 = the Llama 3 run's 16,384 GPUs).")
@click.option("--disks", type=click.IntRange(min=200), default=6000, show_default=True,
              help="Simulated SATA disks, and as many NVMe disks.")
@click.option("--model-dir", type=click.Path(file_okay=False, path_type=Path),
              help="Disk model dir (from train-disk) whose alarm threshold is calibrated; without a model "
                   "there (or without this option) one is trained on the disk simulator with --seed.")
@click.option("--weights-dir", type=click.Path(file_okay=False, path_type=Path),
              help="Where --write puts gpu_weights.json and nvme_weights.json [default: the ones the service loads].")
@click.option("--write", is_flag=True, help="Write the fitted weights and thresholds into the model files.")
@click.option("--json", "as_json", is_flag=True, help="Print the held-out figures as JSON.")
def calibrate_risk(seed, days, gpu_nodes, disks, model_dir, weights_dir, write, as_json):
    """Fit GPU and NVMe risk weights and the disk alarm threshold on simulated fleets; report held-out
    detection at 0.1 % and 1 % false alarms and lead times."""
    from vigil.aiops.disk.model import TrainingConfig, load_model, train_disk_model
    from vigil.aiops.disk.simulate import FleetSpec, simulate_fleet
    from vigil.aiops.risk import calibrate as cal
    from vigil.aiops.risk.calibrate_render import render_table

    try:
        disk_model = load_model(model_dir) if model_dir else None
    except Exception as exc:  # a corrupt or incompatible file: say which, no traceback
        raise click.ClickException(f"{model_dir}: cannot load the disk model: {exc}") from exc
    if disk_model is None:
        click.echo(f"no disk model{f' in {model_dir}' if model_dir else ''}: training one "
                   f"(vigil aiops train-disk --simulate --seed {seed})", err=True)
        disk_model, _ = train_disk_model(simulate_fleet(FleetSpec(seed=seed)), TrainingConfig(seed=seed))
    command = (f"vigil aiops calibrate-risk --seed {seed} --days {days} --gpu-nodes {gpu_nodes} --disks {disks}"
               f"{' --model-dir ' + str(model_dir) if model_dir else ''} --write")
    gpu_model, gpu = cal.calibrate_gpu(seed=seed, days=days, nodes=gpu_nodes)
    sata_threshold, sata = cal.calibrate_sata(disk_model, seed=seed, days=days, disks=disks)
    nvme_model, nvme = cal.calibrate_nvme(seed=seed, days=days, disks=disks)
    reports = [gpu, sata, nvme]
    few = [f"{r.kind} ({r.held_out_failing})" for r in reports if r.held_out_failing < MIN_HELD_OUT_FAILURES]
    if few and write:
        raise click.ClickException(f"too few failures to calibrate on: {', '.join(few)} failing held-out units, "
                                   f"need {MIN_HELD_OUT_FAILURES}; raise --gpu-nodes, --disks or --days")
    if few:
        click.echo(f"warning: too few failures for meaningful figures: {', '.join(few)}", err=True)
    if write:
        from vigil.aiops.risk import gpu_score, nvme_score

        target = weights_dir or gpu_score.WEIGHTS_FILE.parent
        try:
            target.mkdir(parents=True, exist_ok=True)
            cal.write_weights(target / gpu_score.WEIGHTS_FILE.name, gpu_model, seed, days, command, gpu)
            cal.write_weights(target / nvme_score.WEIGHTS_FILE.name, nvme_model, seed, days, command, nvme)
            if model_dir:
                cal.write_disk_threshold(model_dir, disk_model, sata_threshold, seed, days, command, sata)
        except OSError as exc:
            raise click.ClickException(f"cannot write the calibrated models: {exc.strerror or exc}"
                                       f"{f' ({exc.filename})' if exc.filename else ''}") from None
    if as_json:
        click.echo(json.dumps({r.kind: r.to_json() for r in reports}, indent=2, sort_keys=True))
        return
    click.echo(render_table(reports), nl=False)
    if write:
        click.echo(f"wrote gpu_weights.json and nvme_weights.json to {target}"
                   f"{f'; disk alarm threshold {sata_threshold:.4g} to {model_dir}' if model_dir else ''}")


@click.command("suggest-inhibitions")
@click.option("--prometheus", "--prometheus-url", "prometheus_url", type=HttpUrl(), metavar="URL",
              help="Read ALERTS{alertstate=\"firing\"} history from this Prometheus (--prometheus-url: the same).")
@click.option("--input", "input_path", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="JSON: Alertmanager webhook payloads or {labels, startsAt, endsAt} alerts.")
@click.option("--lookback", default="7d", show_default=True, type=Duration(positive=True),
              help="History to read from Prometheus.")
@click.option("--min-support", type=click.IntRange(min=1), default=3, show_default=True,
              help="Least number of co-firings for a rule.")
@click.option("--min-confidence", type=click.FloatRange(0, 1), default=0.95, show_default=True,
              help="Least share of target firings that came with the source firing.")
@click.option("--window", default="5m", show_default=True, type=Duration(positive=True),
              help="How much earlier than its source a target may start and still count as covered.")
def suggest_inhibitions(prometheus_url, input_path, lookback, min_support, min_confidence, window):
    """Propose Alertmanager inhibit_rules from alerts that always fire together."""
    from vigil.aiops.correlate import (AlertInputError, firings_from_json, firings_from_prometheus, group_firings,
                                 mine, render_suggestions)
    from vigil.common.prometheus_api import PrometheusClient, PrometheusUnavailable

    if bool(prometheus_url) == bool(input_path):
        raise click.UsageError("give exactly one of --prometheus URL or --input alerts.json")
    span = None  # JSON: the history's own span
    if input_path:
        try:
            firings = firings_from_json(json.loads(input_path.read_text()))
        except (ValueError, UnicodeDecodeError) as exc:  # JSONDecodeError and AlertInputError are ValueErrors
            raise click.ClickException(f"{input_path}: {exc}") from exc
    else:
        now = time.time()
        span = (now - lookback, now)
        try:
            firings = firings_from_prometheus(PrometheusClient(prometheus_url), *span)
        except PrometheusUnavailable as exc:
            raise click.ClickException(str(exc)) from exc
    mined = mine(firings, min_support=min_support, min_confidence=min_confidence, window_s=window, span=span)
    groups = group_firings(firings, window_s=window)
    click.echo(render_suggestions(mined.rules, groups, len(firings), left_out=mined.left_out,
                                  always_firing=mined.always_firing), nl=False)
