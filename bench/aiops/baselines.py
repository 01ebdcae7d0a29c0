"""Benchmark: fitting dynamic baselines for 1,000 series vs Prophet on a sample of the same series.

One command: `.venv/bin/python bench/aiops/baselines.py` (options: --series, --prophet-sample).
Generates 1,000 series of 14 days at 5 minutes (4,032 points), a fifth of each class, fits them with
`aiops.baseline.train.train` (grid preparation, classification, model, training coverage), then fits
Prophet (daily + weekly seasonality, 99 % interval) on a sample of the same series in the same run and
compares seconds per series. Both are also scored on the two following (held-out) days: the share of
points inside the band. Writes the `aiops-baselines` section of docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import logging
import resource
import time
import tracemalloc
from pathlib import Path

import numpy as np
import pandas as pd

from prometheus_client import CollectorRegistry, generate_latest

from vigil.aiops.baseline import synthetic
from vigil.aiops.baseline.collector import BaselineCollector, BaselineSnapshot
from vigil.aiops.baseline.models import band
from vigil.aiops.baseline.train import TrainSettings, train
from vigil.aiops.history.series import Series
from vigil.aiops.benchmark_record import add_record_option, machine_summary, utc_now, write_section  # the shared benchmarks.md writer

STEP = 300.0
TRAIN_POINTS = 14 * 288
HELD_OUT = 2 * 288
SECTION = "aiops-baselines"
DOC = Path(__file__).resolve().parents[2] / "docs" / "benchmarks.md"


def make_fleet(n: int) -> list[tuple[str, np.ndarray, np.ndarray]]:
    """n (class, times, values) of 16 days: the first 14 train, the last 2 are held out."""
    t = synthetic.grid(days=16)
    kinds = sorted(synthetic.GENERATORS)
    return [(kinds[i % len(kinds)], t, synthetic.GENERATORS[kinds[i % len(kinds)]](t, np.random.default_rng(i))) for i in range(n)]


def held_out_coverage(lower, upper, actual) -> float:
    return float(np.mean((actual >= lower) & (actual <= upper)))


def bench_vigil(fleet):
    raw = [Series(f"s{i}", {"kind": kind}, t[:TRAIN_POINTS], x[:TRAIN_POINTS]) for i, (kind, t, x) in enumerate(fleet)]
    settings = TrainSettings(step=STEP)
    started = time.perf_counter()
    result = train(raw, settings)
    seconds = time.perf_counter() - started
    # memory in a second pass: tracemalloc slows allocation-heavy code, so it must not touch the timing
    tracemalloc.start()
    train(raw, settings)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    entries = {e["metric"]: e for e in result.entries}
    cover, right = [], 0
    for i, (kind, t, x) in enumerate(fleet):
        entry = entries[f"s{i}"]
        right += entry["class"] == kind
        _, lo, hi = band(entry["model"], t[TRAIN_POINTS:], 1.0)
        cover.append(held_out_coverage(lo, hi, x[TRAIN_POINTS:]))
    return seconds, peak, right / len(fleet), cover, entries


def bench_scrape(entries: dict, repeats: int = 5) -> float:
    """Seconds for one `serve` scrape (bands for now of every series, rendered as exposition text)."""
    snapshot = BaselineSnapshot.from_store({"series": list(entries.values()), "sensitivity": 1.0})
    registry = CollectorRegistry()
    registry.register(BaselineCollector(lambda: snapshot))
    started = time.perf_counter()
    for _ in range(repeats):
        generate_latest(registry)
    return (time.perf_counter() - started) / repeats


def bench_prophet(fleet, sample: int):
    from prophet import Prophet

    logging.getLogger("cmdstanpy").disabled = True  # one INFO line per Stan chain otherwise
    logging.getLogger("prophet").setLevel(logging.ERROR)
    picks = np.linspace(0, len(fleet) - 1, sample).astype(int)
    fit_s, cover = [], {}
    # one untimed warm-up fit: the first fit also loads the Stan model, which is not per-series work
    kind, t, x = fleet[picks[0]]
    Prophet(daily_seasonality=True, weekly_seasonality=True).fit(
        pd.DataFrame({"ds": pd.to_datetime(t[:TRAIN_POINTS], unit="s"), "y": x[:TRAIN_POINTS]})
    )
    for i in picks:
        kind, t, x = fleet[i]
        ds = pd.to_datetime(t, unit="s")
        frame = pd.DataFrame({"ds": ds[:TRAIN_POINTS], "y": x[:TRAIN_POINTS]})
        model = Prophet(daily_seasonality=True, weekly_seasonality=True, yearly_seasonality=False, interval_width=0.99)
        started = time.perf_counter()
        model.fit(frame)
        fit_s.append(time.perf_counter() - started)
        forecast = model.predict(pd.DataFrame({"ds": ds[TRAIN_POINTS:]}))
        cover[int(i)] = held_out_coverage(forecast["yhat_lower"].to_numpy(), forecast["yhat_upper"].to_numpy(), x[TRAIN_POINTS:])
    return fit_s, cover


def prophet_version() -> str:
    from importlib.metadata import version

    return version("prophet")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--series", type=int, default=1000)
    parser.add_argument("--prophet-sample", type=int, default=15)
    add_record_option(parser)
    args = parser.parse_args()

    fleet = make_fleet(args.series)
    seconds, peak, accuracy, cover, entries = bench_vigil(fleet)
    per_series = seconds / len(fleet)
    scrape_s = bench_scrape(entries)
    prophet_fit, prophet_cover = bench_prophet(fleet, args.prophet_sample)
    prophet_per_series = float(np.median(prophet_fit))
    sample = sorted(prophet_cover)
    rss_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    classes = pd.Series([e["class"] for e in entries.values()]).value_counts().sort_index()
    text = f"""## AIOps: dynamic baselines (`vigil aiops train`)

Machine: {machine_summary()}. Date: {utc_now()}. Command: `.venv/bin/python bench/aiops/baselines.py`
(--series {args.series} --prophet-sample {args.prophet_sample}).

{len(fleet)} synthetic series of 14 days at 5 minutes ({TRAIN_POINTS:,} points each), a fifth of each class
({", ".join(f"{k} {v}" for k, v in classes.items())} as classified; {100 * accuracy:.1f} % classified as generated).
Prophet {prophet_version()} (daily + weekly seasonality, 99 % interval) fits {len(prophet_fit)} series spread evenly
over the same fleet, in the same run, after one untimed warm-up fit. Held-out: the 2 following days (576 points per series).

| | vigil baselines | Prophet | Prophet / vigil |
|---|---:|---:|---:|
| fit seconds per series (vigil: mean over {len(fleet)}; Prophet: median of {len(prophet_fit)}) | {per_series:.4f} | {prophet_per_series:.3f} | {prophet_per_series / per_series:.0f}x |
| fit all {len(fleet)} series, seconds (Prophet extrapolated) | {seconds:.2f} | {prophet_per_series * len(fleet):.0f} | |
| held-out points inside the band, mean over the Prophet sample | {100 * np.mean([cover[i] for i in sample]):.2f} % | {100 * np.mean([prophet_cover[i] for i in sample]):.2f} % | |
| held-out points inside the band, mean over all {len(fleet)} (worst series) | {100 * np.mean(cover):.2f} % ({100 * np.min(cover):.1f} %) | | |

One `serve` scrape of all {len(fleet)} series (bands for now, exposition text): {1000 * scrape_s:.0f} ms.

Peak memory: {peak / 2**20:.1f} MiB traced by tracemalloc while fitting all {len(fleet)} series (Python + numpy
allocations); the whole benchmark process peaked at {rss_mib:.0f} MiB RSS (Prophet and Stan included).
Target: at least 20x faster than Prophet per series.
"""
    print(text)
    if args.record:
        write_section(DOC, SECTION, text)


if __name__ == "__main__":
    main()
