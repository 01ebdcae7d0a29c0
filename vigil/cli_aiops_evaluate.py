"""`vigil aiops evaluate`: detectors' held-out scores on the benchmarks — `nab` (the Numenta Anomaly
Benchmark, `vigil.cli_aiops_nab`) and `kpi-synth` (the synthetic KPI benchmark, `aiops.kpi_synth`).
Thin: parsing and printing only."""

from __future__ import annotations

import json

import click

from vigil.cli_aiops_nab import Sensitivity, nab

#: sensitivities tried on the tune half by default: risks 1e-5 .. 1e-3 in half decades
DEFAULT_SENSITIVITIES = (0.25, 0.375, 0.5, 0.625, 0.75)
KPI_DETECTORS = ("evt", "vigil", "windowed-gaussian")


@click.group()
def evaluate():
    """Score detectors on a benchmark; settings are chosen on one half and reported on the other."""


evaluate.add_command(nab)


def _settings(detector: str, sensitivities: tuple[float, ...]) -> dict:
    """name -> (detector factory, flag threshold) for every candidate setting."""
    from vigil.aiops.detect import default_threshold, make_detector
    from vigil.aiops.detect.evt_detector import EvtDetector, EvtParameters

    if detector == "evt":
        return {f"sensitivity {s:g}": (lambda s=s: EvtDetector(EvtParameters.for_sensitivity(s)), 0.5)
                for s in sensitivities}
    # the other detectors keep their NAB-tuned threshold: what `vigil aiops detect` labels with today
    threshold = default_threshold(detector, "standard")
    return {f"threshold {threshold:.4g}": (lambda: make_detector(detector), threshold)}


def _line(label: str, score) -> str:
    a, s = score.adjusted, score.strict
    return (f"{label:<24} point-adjusted P {a.precision:.3f} R {a.recall:.3f} F1 {a.f1:.3f}   "
            f"strict P {s.precision:.3f} R {s.recall:.3f} F1 {s.f1:.3f}   ({score.series} series, "
            f"{score.points:,} points, {score.seconds:.1f} s)")


@evaluate.command("kpi-synth")
@click.option("--detector", type=click.Choice(KPI_DETECTORS), default="evt", show_default=True)
@click.option("--sensitivity", "sensitivities", multiple=True, type=Sensitivity(),
              help="A candidate sensitivity for evt (repeatable); the best on the tune half is reported. "
                   "Default: 0.25, 0.375, 0.5, 0.625, 0.75.")
@click.option("--curve", "curves", multiple=True, type=click.Choice(["periodic", "stable", "unstable"]),
              help="Only these curve classes (repeatable). Default: all.")
@click.option("--kind", "kinds", multiple=True,
              type=click.Choice(["spike", "dip", "level_shift", "variance", "trend", "missing"]),
              help="Only these anomaly kinds (repeatable). Default: all.")
@click.option("--per-half", type=click.IntRange(1, 10), default=2, show_default=True,
              help="Series per curve class and anomaly kind in each half.")
@click.option("--json", "as_json", is_flag=True, help="Print the results as JSON.")
def kpi_synth(detector: str, sensitivities: tuple[float, ...], curves, kinds, per_half: int, as_json: bool):
    """Score a detector on the synthetic KPI benchmark (minute-level periodic, stable and unstable
    curves with spikes, dips, level shifts, variance and trend changes, missing data): the setting with
    the best point-adjusted F1 on the tune half is scored on the held-out half, point-adjusted (7-point
    delay) and strict point-wise."""
    from vigil.aiops.kpi_synth.evaluate import choose_and_score

    result = choose_and_score(_settings(detector, sensitivities or DEFAULT_SENSITIVITIES), per_half, curves, kinds)
    if as_json:
        click.echo(json.dumps({"benchmark": "kpi-synth", "detector": detector, "chosen": result.chosen,
                               "tune": {name: s.as_dict() for name, s in result.tune.items()},
                               "heldout": result.heldout.as_dict()}, indent=2))
        return
    click.echo(f"kpi-synth, detector {detector}: settings tried on the tune half")
    for name, score in result.tune.items():
        click.echo("  " + _line(name + (" *" if name == result.chosen else ""), score))
    click.echo(f"held-out half, {result.chosen}:")
    click.echo("  " + _line("all", result.heldout))
    for kind, counts in result.heldout.by_kind.items():
        click.echo(f"  {kind:<24} point-adjusted P {counts.precision:.3f} R {counts.recall:.3f} F1 {counts.f1:.3f}")
    for curve, counts in result.heldout.by_curve.items():
        click.echo(f"  {curve:<24} point-adjusted P {counts.precision:.3f} R {counts.recall:.3f} F1 {counts.f1:.3f}")
