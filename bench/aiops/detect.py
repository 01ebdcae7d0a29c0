"""Throughput and peak memory of `vigil aiops detect` detectors over the whole NAB corpus.

    .venv/bin/python bench/aiops/detect.py [--nab-dir DIR] [--repeat N]

Each detector runs in its own child process (so peak RSS is its own): it loads the corpus, then scores
every file with a fresh detector. Peers measured in the same run: our reimplementation of NAB's
windowed Gaussian (also streaming, point by point) and a vectorised pandas rolling z-score (batch, not
streaming: the speed a numpy-level implementation reaches). Figures go to section `aiops-detect` of
docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from vigil.aiops.nab.corpus import DEFAULT_NAB_DIR, load_corpus  # noqa: E402
from vigil.aiops.benchmark_record import add_record_option, machine_summary, utc_now, write_section  # noqa: E402

CONTENDERS = ["vigil", "vigil aiops detect (CLI)", "windowed-gaussian", "pandas-rolling-z", "load-only"]


def pandas_rolling_z(values):
    import numpy as np
    import pandas as pd

    s = pd.Series(values)
    mean = s.rolling(6400, min_periods=2).mean().shift(1)
    std = s.rolling(6400, min_periods=2).std().shift(1)
    z = ((s - mean).abs() / std.replace(0, np.nan)).fillna(0.0).to_numpy()
    return z / (z + 1.0)


def run_cli(corpus) -> None:
    """The command as a user runs it, in-process: read each CSV, score, write the scored CSV."""
    import tempfile

    from click.testing import CliRunner

    from vigil.cli import main as vigil_main

    runner = CliRunner()
    with tempfile.TemporaryDirectory() as tmp:
        for f in corpus.files:
            # --allow-unsorted: one NAB file (machine_temperature_system_failure.csv) steps back in time
            result = runner.invoke(vigil_main, ["aiops", "detect", str(corpus.root / "data" / f.name),
                                                "--allow-unsorted", "--output", str(Path(tmp) / "scores.csv")])
            if result.exit_code != 0:
                raise SystemExit(f"detect failed on {f.name}: {result.output}")


def worker(name: str, nab_dir: str, repeat: int) -> None:
    corpus = load_corpus(nab_dir)
    best = float("inf")
    if name.endswith("(CLI)"):
        for _ in range(repeat):
            started = time.perf_counter()
            run_cli(corpus)
            best = min(best, time.perf_counter() - started)
    elif name != "load-only":
        from vigil.aiops.detect import make_detector

        for _ in range(repeat):
            started = time.perf_counter()
            for f in corpus.files:
                if name == "pandas-rolling-z":
                    pandas_rolling_z(f.series.values)
                else:
                    make_detector(name).score_series(f.series.timestamps, f.series.values)
            best = min(best, time.perf_counter() - started)
    print(json.dumps({"seconds": best, "points": corpus.n_points}))


def measure(name: str, nab_dir: str, repeat: int) -> dict:
    proc = subprocess.Popen([sys.executable, __file__, "--worker", name, "--nab-dir", nab_dir, "--repeat", str(repeat)],
                            stdout=subprocess.PIPE, text=True)
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    if status != 0:
        raise SystemExit(f"worker {name} failed (status {status})")
    result = json.loads(out)
    result["peak_rss_mib"] = usage.ru_maxrss / 1024.0  # Linux reports KiB
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nab-dir", default=str(DEFAULT_NAB_DIR))
    parser.add_argument("--repeat", type=int, default=2, help="runs per detector; the fastest counts")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--benchmarks-file", default=str(REPO / "docs" / "benchmarks.md"))
    add_record_option(parser)
    args = parser.parse_args()
    if args.worker:
        worker(args.worker, args.nab_dir, args.repeat)
        return
    results = {name: measure(name, args.nab_dir, args.repeat) for name in CONTENDERS}
    base_rss = results["load-only"]["peak_rss_mib"]
    ours = results["vigil"]
    rows = []
    for name in CONTENDERS[:-1]:
        r = results[name]
        pps = r["points"] / r["seconds"]
        rows.append(f"| {name} | {r['seconds']:.2f} | {pps:,.0f} | {ours['seconds'] / r['seconds']:.2f} | "
                    f"{r['peak_rss_mib']:.0f} | {max(r['peak_rss_mib'] - base_rss, 0.0):.0f} |")
        print(f"{name:<20} {r['seconds']:7.2f} s  {pps:12,.0f} points/s  peak RSS {r['peak_rss_mib']:.0f} MiB")
    body = "\n".join([
        "## Detector throughput (`python bench/aiops/detect.py`)",
        "",
        f"{utc_now()} on {machine_summary()}; whole NAB corpus ({ours['points']:,} points), one core, best of "
        f"{args.repeat}. *vigil s / this s*: vigil's seconds over this detector's "
        "(below 1: vigil is faster). The CLI row runs `vigil aiops detect FILE --output ...` in-process "
        "on every corpus file: CSV parsing, scoring and writing. Peak RSS includes loading the corpus "
        f"({base_rss:.0f} MiB for loading alone); *above load* is the detector's own share.",
        "",
        "| Detector | Seconds | Points/s | vigil s / this s | Peak RSS MiB | Above load MiB |",
        "|---|---|---|---|---|---|",
        *rows,
    ])
    print(body)
    if args.record:
        write_section(Path(args.benchmarks_file), "aiops-detect", body)


if __name__ == "__main__":
    main()
