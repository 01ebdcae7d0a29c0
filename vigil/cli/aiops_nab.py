"""`vigil aiops detect` and `vigil aiops evaluate nab`: anomaly scores for a CSV series, and the
detectors' scores on the Numenta Anomaly Benchmark. Thin: parsing and validation only (labels, sensitivity
and output formats are `aiops.detect.labels`)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from vigil.aiops.detect import DETECTORS, LABELS, SERIES_DETECTORS, default_threshold, detector_for, labelling_of, make_detector
from vigil.aiops.detect.labels import label_series, parse_sensitivity, threshold_for, to_csv, to_json
from vigil.aiops.detect.series import SeriesFormatError, read_series

REPO_ROOT = Path(__file__).resolve().parents[2]  # vigil/cli/aiops_nab.py -> the repository


class Sensitivity(click.ParamType):
    """`low`, `medium`, `high` or a number from 0 to 1."""

    name = "low|medium|high|0..1"

    def convert(self, value, param, ctx):
        if isinstance(value, float):
            return value
        try:
            return parse_sensitivity(str(value))
        except ValueError as exc:
            self.fail(str(exc), param, ctx)


@click.command()
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--output", "-o", type=click.Path(dir_okay=False, writable=True, path_type=Path),
              help="Write the scored rows here instead of stdout.")
@click.option("--threshold", type=click.FloatRange(0.0, 1.0),
              help="Label a row 1 when its score is >= this. Default: tuned on NAB (standard profile).")
@click.option("--sensitivity", type=Sensitivity(),
              help="How readily to flag: low, medium (the tuned threshold), high, or 0..1. Not with --threshold.")
@click.option("--warmup", type=click.IntRange(min=0), metavar="N",
              help="Label no row among the first N (the detector learns from them). Default: the detector's own.")
@click.option("--format", "fmt", type=click.Choice(["csv", "json"]), default="csv", show_default=True)
@click.option("--explain", is_flag=True, help="Add an explanation column: which test flagged a row, with its numbers.")
@click.option("--allow-unsorted", is_flag=True,
              help="Accept timestamps that step back and score rows in file order (default: an error).")
@click.option("--detector", type=click.Choice(sorted(DETECTORS)), default="vigil", show_default=True)
@click.option("--labels", type=click.Choice(LABELS),
              help="points: label every point of an anomalous stretch (how KPI data is labelled); alarms: one "
                   "alarm per episode (NAB's, a pager's). Default: the detector's own (alarms for vigil).")
def detect(file: Path, output: Path | None, threshold: float | None, sensitivity: float | None, warmup: int | None,
           fmt: str, explain: bool, allow_unsorted: bool, detector: str, labels: str | None):
    """Score every row of FILE (CSV with a `timestamp,value` header, rows in time order).

    Writes `timestamp,value,anomaly_score,label` for every row (and `explanation` with --explain), as CSV
    or JSON. Scores are causal: a row's score uses only that row and the rows before it.
    """
    if threshold is not None and sensitivity is not None:
        raise click.UsageError("give --threshold or --sensitivity, not both")
    try:
        detector = detector_for(detector, labels)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--labels") from None
    try:
        scorer = make_detector(detector, warmup=warmup, sensitivity=sensitivity)
    except ValueError as exc:
        raise click.BadParameter(f"{exc} (detector {detector})", param_hint="--warmup") from None
    try:
        series = read_series(file, ordered=not allow_unsorted)
    except SeriesFormatError as exc:
        raise click.ClickException(str(exc)) from None
    if threshold is None:
        try:
            threshold = default_threshold(detector, "standard")
        except ValueError as exc:
            raise click.ClickException(str(exc)) from None
        if sensitivity is not None and not scorer.own_sensitivity:
            threshold = threshold_for(threshold, sensitivity)
    result = label_series(scorer, series.timestamps, series.values, threshold, warmup or 0, explain)
    if fmt == "json":
        text = to_json(result, {"file": str(file), "detector": detector, "labels": labelling_of(detector),
                                "threshold": threshold, "sensitivity": sensitivity, "warmup": warmup})
    else:
        text = to_csv(result)
    if output is None:
        sys.stdout.write(text)
    else:
        try:
            output.write_text(text, encoding="utf-8")
        except OSError as exc:
            raise click.ClickException(f"cannot write {output}: {exc.strerror or exc}") from None
        click.echo(f"{len(result.scores)} rows scored, {result.flagged} labelled anomalous (threshold {threshold:.6g}), "
                   f"{result.warmup_rows} warm-up rows unlabelled -> {output}", err=True)
    rows = len(result.scores)
    if result.warmup_rows * 2 >= rows:  # all or most of the file was warm-up
        click.echo(f"hint: {result.warmup_rows} of {rows} rows were the {detector} detector's warm-up "
                   f"({'--warmup ' + str(warmup) if warmup is not None else 'its default'}) and cannot be labelled; "
                   "pass a shorter --warmup N to label sooner", err=True)


@click.command("nab")  # a sub-command of `vigil aiops evaluate` (vigil.cli.aiops_evaluate)
@click.option("--nab-dir", type=click.Path(file_okay=False, path_type=Path),
              default=REPO_ROOT.parent / "shared" / "data" / "nab", show_default=True,
              help="The NAB corpus (data/, labels/, config/, results/).")
@click.option("--detector", "detectors", multiple=True, type=click.Choice(sorted([*DETECTORS, *SERIES_DETECTORS])),
              help="Detector to evaluate (repeatable). Default: all.")
@click.option("--json", "as_json", is_flag=True, help="Print the results as JSON.")
@click.option("--record/--no-record", default=False, show_default=True,
              help="Also append this run's figures to the benchmarks file (section aiops-nab); off: print only.")
@click.option("--benchmarks-file", type=click.Path(dir_okay=False, path_type=Path),
              default=REPO_ROOT / "docs" / "benchmarks.md", show_default=True, help="The file --record writes.")
@click.option("--save-thresholds", is_flag=True,
              help="Store the tuned thresholds as the detectors' defaults (maintainers).")
def nab(nab_dir: Path, detectors: tuple[str, ...], as_json: bool, record: bool, benchmarks_file: Path,
        save_thresholds: bool):
    """Score detectors on the Numenta Anomaly Benchmark: standard, low-FP and low-FN profiles, each
    with a threshold tuned on the whole corpus and with thresholds tuned on held-out halves."""
    from vigil.aiops.nab.corpus import NabCorpusError, load_corpus
    from vigil.aiops.nab.evaluate import evaluate as evaluate_detector
    from vigil.aiops.nab.report import format_table, record_results
    from vigil.aiops.nab.thresholds import save_thresholds as store

    try:
        corpus = load_corpus(nab_dir)
    except NabCorpusError as exc:
        raise click.ClickException(str(exc)) from None
    names = list(detectors) or [*DETECTORS, *SERIES_DETECTORS]
    results = [evaluate_detector(corpus, name) for name in names]
    if as_json:
        click.echo(json.dumps({"corpus": str(nab_dir), "points": corpus.n_points,
                               "results": [r.as_dict() for r in results]}, indent=2))
    else:
        click.echo(format_table(results, corpus.published))
    if record:
        record_results(benchmarks_file, results)
        click.echo(f"recorded in {benchmarks_file} (section aiops-nab)", err=True)
    if save_thresholds:
        store(results)
