"""Anomaly detection on real operations KPIs: `vigil aiops detect --labels points` on the labelled series
of the AIOps Challenge 2018, scored by the challenge's rule, leave-series-out.

    .venv/bin/python bench/aiops/kpi_real.py [--data-dir DIR] [--sensitivities 0.4,0.45,0.5,0.55,0.6]
                                             [--jobs 2] [--compare] [--record]

Every series goes through the command as a user runs it (in-process; the file is first written as
`timestamp,value` with ISO UTC times), once per candidate sensitivity. The files, sorted by name,
alternate into halves A and B. On each half the rule of `vigil aiops evaluate kpi-synth` picks the
sensitivity (the best pooled F1 among those with precision at least 0.8; when none has, the most precise);
that sensitivity scores the other half. No label of a half chose the setting that scores it. Prints a
table per series (each at the sensitivity its own half did not choose) and each held-out half's and the
pooled figures; `--compare` adds `vigil` (alarms) and `evt` at their defaults. Figures go to section
`aiops-kpi-real` of docs/benchmarks.md with --record only.
"""

from __future__ import annotations

import argparse
import csv
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from vigil.aiops.benchmark_record import add_record_option, machine_summary, utc_now, write_section  # noqa: E402
from vigil.aiops.kpi_real import challenge_counts, halves, read_dir, script_counts  # noqa: E402
from vigil.aiops.kpi_synth.evaluate import KpiScore, choose  # noqa: E402
from vigil.aiops.kpi_synth.scoring import Counts, segments, strict_counts  # noqa: E402

DOC = REPO / "docs" / "benchmarks.md"
SECTION = "aiops-kpi-real"
DATA = REPO.parent / "shared" / "data" / "kpi-aiops2018-preliminary"
MIN_PRECISION = 0.8  # the floor
PUBLISHED = "FluxEV 0.790, SR-CNN 0.771 (KDD'19), Donut 0.729 (WWW'18), on the finals' KPIs"


def detect(args: tuple[str, list[str]]) -> np.ndarray:
    """`vigil aiops detect SERIES ARGS... --output ...`, in-process; the labels it writes."""
    from click.testing import CliRunner

    from vigil.cli import main as vigil_main

    series, options = args
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "scores.csv"
        result = CliRunner().invoke(vigil_main, ["aiops", "detect", series, *options, "--output", str(out)])
        if result.exit_code != 0:
            raise SystemExit(f"vigil aiops detect {series} {' '.join(options)} failed: {result.output}"
                             f"{result.exception!r}")
        with out.open(newline="") as handle:
            return np.array([row["label"] == "1" for row in csv.DictReader(handle)], dtype=bool)


def run_all(kpis, csvs: dict[str, str], settings: dict[str, list[str]], jobs: int) -> dict[tuple[str, str], np.ndarray]:
    """(setting, kpi name) -> flags, for every setting and KPI (largest files first, over `jobs` processes)."""
    work = [(setting, k.name) for setting in settings for k in sorted(kpis, key=len, reverse=True)]
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        flags = pool.map(detect, [(csvs[name], settings[setting]) for setting, name in work])
        return dict(zip(work, flags))


def score(kpis, flags: dict, setting: str) -> KpiScore:
    result = KpiScore()
    for k in kpis:
        result.adjusted += challenge_counts(flags[setting, k.name], k.labels)
        result.strict += strict_counts(flags[setting, k.name], k.labels)
        result.series += 1
        result.points += len(k)
    return result


def script_score(kpis, flags: dict, setting_of: dict[str, str]) -> Counts:
    total = Counts()
    for k in kpis:
        total += script_counts(flags[setting_of[k.name], k.name], k.labels, k.timestamps)
    return total


def figures(c: Counts) -> str:
    return f"{c.precision:.3f} | {c.recall:.3f} | **{c.f1:.3f}**"


def report(kpis, flags, sensitivities, chosen, compare: list[str], seconds: float) -> str:
    by_name = {k.name: k for k in kpis}
    half_of = {name: h for h, names in chosen["halves"].items() for name in names}
    other = {"A": "B", "B": "A"}
    setting_of = {name: chosen[other[half_of[name]]] for name in by_name}  # scored at the other half's choice
    lines = [f"""## AIOps: real operations KPIs (AIOps Challenge 2018, `vigil aiops detect --labels points`)

Machine: {machine_summary()}. Date: {utc_now()}. Command: `.venv/bin/python bench/aiops/kpi_real.py`
(sensitivities {', '.join(f'{s:g}' for s in sensitivities)}; {seconds:.0f} s). Data: {len(kpis)} series, \
{sum(len(k) for k in kpis):,} points, {sum(int(k.labels.sum()) for k in kpis):,} labelled. Scoring: the challenge's (a labelled
stretch is found in full when one of its first 7 points is flagged), pooled over series. Leave-series-out:
the files, sorted by name, alternate into halves A and B; the sensitivity is chosen on one half (best F1
with precision >= {MIN_PRECISION}) and scores the other. Published: {PUBLISHED}.

| series | points | labelled | stretches | sensitivity (chosen on) | flagged | precision | recall | F1 |
|---|---:|---:|---:|---|---:|---:|---:|---:|"""]
    for name in sorted(by_name):
        k, setting = by_name[name], setting_of[name]
        c = challenge_counts(flags[setting, name], k.labels)
        lines.append(f"| {name[:8]} ({half_of[name]}) | {len(k):,} | {int(k.labels.sum()):,} | "
                     f"{len(segments(k.labels))} | {setting} ({other[half_of[name]]}) | "
                     f"{int(flags[setting, name].sum()):,} | {c.precision:.3f} | {c.recall:.3f} | {c.f1:.3f} |")
    lines += ["", "| scored | chosen on | sensitivity | precision | recall | F1 | strict F1 |",
              "|---|---|---|---:|---:|---:|---:|"]
    pooled, pooled_strict = Counts(), Counts()
    for half in ("A", "B"):
        members = [by_name[n] for n in chosen["halves"][half]]
        s = score(members, flags, chosen[other[half]])
        pooled, pooled_strict = pooled + s.adjusted, pooled_strict + s.strict
        lines.append(f"| half {half} (held out) | half {other[half]} | {chosen[other[half]]} | {figures(s.adjusted)} | "
                     f"{s.strict.f1:.3f} |")
    lines.append(f"| **both halves, pooled** | the other half | | {figures(pooled)} | {pooled_strict.f1:.3f} |")
    script = script_score(kpis, flags, setting_of)
    lines.append(f"| both, organisers' script rule (grid, onset + 7) | the other half | | {figures(script)} | |")
    for name in compare:
        s = score(kpis, flags, name)
        lines.append(f"| all, `{name}` at its defaults | — | — | {figures(s.adjusted)} | {s.strict.f1:.3f} |")
    lines += ["", "Choosing on each half (precision / recall / F1 at each sensitivity):", ""]
    for half in ("A", "B"):
        cells = [f"{setting} {c.precision:.3f} / {c.recall:.3f} / {c.f1:.3f}"
                 for setting, c in ((name, result.adjusted) for name, result in chosen["tune"][half].items())]
        lines.append(f"* half {half} → {chosen[half]}: " + "; ".join(cells))
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=DATA, help="the KPI files (timestamp,value,label CSVs)")
    parser.add_argument("--sensitivities", default="0.4,0.45,0.5,0.55,0.6",
                        help="candidates for --labels points, comma-separated (0..1)")
    parser.add_argument("--jobs", type=int, default=2, help="worker processes")
    parser.add_argument("--compare", action="store_true", help="also score vigil (alarms) and evt at their defaults")
    add_record_option(parser)
    args = parser.parse_args()
    sensitivities = [float(s) for s in args.sensitivities.split(",")]
    kpis = read_dir(args.data_dir)
    settings = {f"{s:g}": ["--labels", "points", "--sensitivity", f"{s:g}"] for s in sensitivities}
    compare = {"vigil": [], "evt": ["--detector", "evt"]} if args.compare else {}
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        csvs = {k.name: str(k.write_series(Path(tmp) / f"{k.name}.csv")) for k in kpis}
        flags = run_all(kpis, csvs, {**settings, **compare}, args.jobs)
    seconds = time.perf_counter() - started
    a, b = halves([k.name for k in kpis])
    chosen = {"halves": {"A": a, "B": b}, "tune": {}}
    for half, names in (("A", a), ("B", b)):
        members = [k for k in kpis if k.name in names]
        chosen["tune"][half] = {setting: score(members, flags, setting) for setting in settings}
        chosen[half] = choose(chosen["tune"][half], MIN_PRECISION)
    text = report(kpis, flags, sensitivities, chosen, list(compare), seconds)
    print(text)
    if args.record:
        write_section(DOC, SECTION, text)


if __name__ == "__main__":
    main()
