"""Presenting NAB evaluation results: the comparison table and the benchmark history row."""

from __future__ import annotations

from pathlib import Path

from vigil.aiops.nab.evaluate import PROFILES, DetectorResult
from vigil.aiops.benchmark_record import append_table_row, machine_summary, utc_now

#: our detector names -> their names in NAB's published results
PUBLISHED_NAMES = {"windowed-gaussian": "windowedGaussian", "relative-entropy": "relativeEntropy", "null": "null"}
#: published detectors shown for context in every table
CONTEXT = ["ARTime", "numenta", "contextOSE", "earthgeckoSkyline", "relativeEntropy", "windowedGaussian", "null"]

SECTION = "aiops-nab"
PREAMBLE = """## NAB scores (`vigil aiops evaluate nab`)

One row per run. *tuned*: one threshold per profile chosen on the whole corpus (as NAB's published
scoreboard does); *held-out*: thresholds chosen on one half of the files score the other half, both
ways (2-fold, files alternating within each category). Published figures for comparison: ARTime
74.9 / 65.2 / 80.4, Numenta HTM 70.1 / 63.1 / 74.3, Relative Entropy 54.6 / 47.6 / 58.8, Windowed
Gaussian 39.6 / 20.9 / 47.4."""
HEADER = ["Date", "Machine", "Detector (parameters)", "Standard tuned / held-out",
          "Low FP tuned / held-out", "Low FN tuned / held-out", "Detect s"]


def _fmt(x: float | None) -> str:
    return "—" if x is None else f"{x:.1f}"


def format_table(results: list[DetectorResult], published: dict[str, dict[str, float]]) -> str:
    """Plain-text table: our detectors (tuned and held-out) next to published figures."""
    lines = [f"{'detector':<28}{'standard':>20}{'low FP':>20}{'low FN':>20}",
             f"{'':<28}" + f"{'tuned/held-out/pub':>20}" * 3]
    for r in results:
        pub = published.get(PUBLISHED_NAMES.get(r.detector, ""), {})
        cells = []
        for ours, nab_name in PROFILES.items():
            p = r.profiles[ours]
            cells.append(f"{_fmt(p.tuned)}/{_fmt(p.holdout)}/{_fmt(pub.get(nab_name))}")
        lines.append(f"{r.detector:<28}" + "".join(f"{c:>20}" for c in cells))
    lines.append("published (NAB scoreboard):")
    for name in CONTEXT:
        if name in published:
            row = published[name]
            lines.append(f"  {name:<26}" + "".join(f"{_fmt(row[n]):>20}" for n in PROFILES.values()))
    return "\n".join(lines)


def record_results(path: Path, results: list[DetectorResult]) -> None:
    """Append one history row per detector to section `aiops-nab` of the benchmarks file."""
    for r in results:
        params = ", ".join(f"{k}={v}" for k, v in r.parameters.items()) or "—"
        cells = [f"{_fmt(r.profiles[p].tuned)} / {_fmt(r.profiles[p].holdout)}" for p in PROFILES]
        row = [utc_now(), machine_summary(), f"{r.detector} ({params})", *cells, f"{r.seconds:.1f}"]
        append_table_row(path, SECTION, PREAMBLE, HEADER, row)
