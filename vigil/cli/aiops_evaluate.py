"""`vigil aiops evaluate`: detectors' held-out scores on the benchmarks — `nab` (the Numenta Anomaly
Benchmark, `vigil.cli.aiops_nab`) and `kpi-synth` (the synthetic KPI benchmark, `aiops.kpi_synth`).
Thin: parsing and printing only."""

from __future__ import annotations

import json

import click

from vigil.aiops.kpi_synth.evaluate import (DEFAULT_SENSITIVITIES, DEFAULT_VARIANCE_GATES, DETECTORS, MIN_PRECISION,
                                            TUNE_PER_HALF, choose_and_score, settings_for)
from vigil.cli.aiops_nab import Sensitivity, nab


@click.group()
def evaluate():
    """Score detectors on a benchmark; settings are chosen on one half and reported on the other."""


evaluate.add_command(nab)


def _line(label: str, score) -> str:
    a, s = score.adjusted, score.strict
    return (f"{label:<36} point-adjusted P {a.precision:.3f} R {a.recall:.3f} F1 {a.f1:.3f}   "
            f"strict P {s.precision:.3f} R {s.recall:.3f} F1 {s.f1:.3f}   ({score.series} series, "
            f"{score.points:,} points, {score.seconds:.1f} s)")


@evaluate.command("kpi-synth")
@click.option("--detector", type=click.Choice(DETECTORS), default="evt", show_default=True)
@click.option("--sensitivity", "sensitivities", multiple=True, type=Sensitivity(),
              help="A candidate sensitivity for evt (repeatable); the best on the tune half is reported. "
                   "Default: 0.375 to 0.75 in steps of 0.0625 (risks 3.2e-5 .. 1e-3).")
@click.option("--variance-gate", "variance_gates", multiple=True, type=click.FloatRange(0.0, 10.0),
              help="A candidate variance gate for evt (repeatable): the |z| a point needs to be labelled for "
                   "the shift or the noise around it. Default: 0.5 and 1.")
@click.option("--min-precision", type=click.FloatRange(0.0, 1.0), default=MIN_PRECISION, show_default=True,
              help="The rule on the tune half: the best point-adjusted F1 among the settings with at least "
                   "this point-adjusted precision (none: the most precise). 0: the best F1.")
@click.option("--tune-only", is_flag=True, help="Choose on the tune half and stop: the held-out half is not scored.")
@click.option("--curve", "curves", multiple=True, type=click.Choice(["periodic", "stable", "unstable"]),
              help="Only these curve classes (repeatable). Default: all.")
@click.option("--kind", "kinds", multiple=True,
              type=click.Choice(["spike", "dip", "level_shift", "variance", "trend", "missing"]),
              help="Only these anomaly kinds (repeatable). Default: all.")
@click.option("--per-half", type=click.IntRange(1, 10), default=2, show_default=True,
              help="Held-out series per curve class and anomaly kind (odd seeds 1, 3, ...).")
@click.option("--tune-per-half", type=click.IntRange(1, 30), default=TUNE_PER_HALF, show_default=True,
              help="Tune series per curve class and anomaly kind (even seeds 0, 2, ...).")
@click.option("--json", "as_json", is_flag=True, help="Print the results as JSON.")
def kpi_synth(detector: str, sensitivities: tuple[float, ...], variance_gates: tuple[float, ...], min_precision: float,
              tune_only: bool, curves, kinds, per_half: int, tune_per_half: int, as_json: bool):
    """Score a detector on the synthetic KPI benchmark (minute-level periodic, stable and unstable
    curves with spikes, dips, level shifts, variance and trend changes, missing data): the setting with
    the best point-adjusted F1 on the tune half (with at least --min-precision point-adjusted precision)
    is scored on the held-out half, point-adjusted (7-point delay) and strict point-wise."""
    settings = settings_for(detector, sensitivities or DEFAULT_SENSITIVITIES, variance_gates or DEFAULT_VARIANCE_GATES)
    result = choose_and_score(settings, per_half, curves, kinds, min_precision, look=not tune_only,
                              tune_per_half=tune_per_half)
    if as_json:
        click.echo(json.dumps({"benchmark": "kpi-synth", "detector": detector, "chosen": result.chosen,
                               "min_precision": min_precision,
                               "tune": {name: s.as_dict() for name, s in result.tune.items()},
                               "heldout": result.heldout and result.heldout.as_dict()}, indent=2))
        return
    click.echo(f"kpi-synth, detector {detector}: settings tried on the tune half" if result.tune
               else f"kpi-synth, detector {detector}: one setting, nothing to choose on the tune half")
    for name, score in result.tune.items():
        click.echo("  " + _line(name + (" *" if name == result.chosen else ""), score))
    if result.heldout is None:
        click.echo(f"chosen: {result.chosen} (point-adjusted precision at least {min_precision:g}); held-out not scored")
        return
    click.echo(f"held-out half, {result.chosen}:")
    click.echo("  " + _line("all", result.heldout))
    for kind, counts in result.heldout.by_kind.items():
        click.echo(f"  {kind:<24} point-adjusted P {counts.precision:.3f} R {counts.recall:.3f} F1 {counts.f1:.3f}")
    for curve, counts in result.heldout.by_curve.items():
        click.echo(f"  {curve:<24} point-adjusted P {counts.precision:.3f} R {counts.recall:.3f} F1 {counts.f1:.3f}")
