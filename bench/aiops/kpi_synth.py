"""Detectors on the synthetic KPI benchmark: held-out point-adjusted and strict F1, and speed.

    .venv/bin/python bench/aiops/kpi_synth.py [--per-half N] [--tune-per-half N] [--record]

`evt` gets its setting chosen on the tune half by `vigil aiops evaluate kpi-synth`'s rule (the best
point-adjusted F1 among the settings with precision at least 0.952, over sensitivities 0.375 .. 0.75
and variance gates 0.5 and 1); `vigil`
and `windowed-gaussian` keep their NAB-tuned thresholds (what `vigil aiops detect` labels with). All
are scored on the held-out half. Figures go to section `aiops-kpi-synth` of docs/benchmarks.md with
--record only.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from vigil.aiops.benchmark_record import add_record_option, machine_summary, utc_now, write_section  # noqa: E402
from vigil.aiops.kpi_synth.evaluate import DETECTORS, TUNE_PER_HALF, choose_and_score, settings_for  # noqa: E402

DOC = REPO / "docs" / "benchmarks.md"
SECTION = "aiops-kpi-synth"


def row(detector: str, result) -> str:
    a, s, h = result.heldout.adjusted, result.heldout.strict, result.heldout
    return (f"| {detector} ({result.chosen}) | {a.precision:.3f} | {a.recall:.3f} | **{a.f1:.3f}** | "
            f"{s.precision:.3f} | {s.recall:.3f} | {s.f1:.3f} | {1e6 * h.seconds / h.points:.1f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-half", type=int, default=2, help="held-out seeds per curve × kind")
    parser.add_argument("--tune-per-half", type=int, default=TUNE_PER_HALF, help="tune seeds per curve × kind")
    add_record_option(parser)
    args = parser.parse_args()
    results = {name: choose_and_score(settings_for(name), args.per_half, tune_per_half=args.tune_per_half)
               for name in DETECTORS}
    heldout = results["evt"].heldout
    text = f"""## AIOps: synthetic KPI benchmark (`vigil aiops evaluate kpi-synth`)

Machine: {machine_summary()}. Date: {utc_now()}. Command: `.venv/bin/python bench/aiops/kpi_synth.py`
(--per-half {args.per_half}, --tune-per-half {args.tune_per_half}). Held-out half: {heldout.series} series, {heldout.points:,} points (see
docs/aiops-detector.md). Point-adjusted: a segment is found when one of its first 7 points is flagged;
strict: point by point.

| detector (setting) | PA precision | PA recall | PA F1 | strict precision | strict recall | strict F1 | µs / point |
|---|---:|---:|---:|---:|---:|---:|---:|
""" + "\n".join(row(name, r) for name, r in results.items()) + "\n"
    print(text)
    if args.record:
        write_section(DOC, SECTION, text)


if __name__ == "__main__":
    main()
