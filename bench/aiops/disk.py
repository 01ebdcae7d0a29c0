"""Disk failure prediction: the trained model against SMART rules operators use, on held-out disks.

    .venv/bin/python bench/aiops/disk.py [--disks 3000] [--days 120] [--seeds 0,1,2]

For each seed: simulate a fleet, train `vigil aiops train-disk`'s model (split by disk, threshold on
validation disks for 0.1 % false alarms per disk-day), and score the test disks with it and with
peers in the same run: Backblaze's rule of thumb (alarm while any of SMART 5/187/188/197/198 is
above zero), a delta rule (alarm when any of them grew in the last 7 days), and a model on power-on
hours only (the leakage control). Figures go to section `aiops-disk` of docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from vigil.aiops.disk.features import COUNTER_ATTRIBUTES, add_features  # noqa: E402
from vigil.aiops.disk.model import (  # noqa: E402
    TrainingConfig, evaluate, fit_classifier, label_rows, split_disks, threshold_for_far, train_disk_model,
)
from vigil.aiops.disk.simulate import FleetSpec, simulate_fleet  # noqa: E402
from vigil.aiops.benchmark_record import add_record_option, machine_summary, utc_now, write_section  # noqa: E402


class RuleScorer:
    """A fixed SMART rule in the shape `evaluate` expects (score > threshold = alarm)."""

    def __init__(self, columns: list[str]):
        self.columns, self.threshold = columns, 0.0

    def score(self, featured):
        return (featured[self.columns].to_numpy(dtype=float) > 0).any(axis=1).astype(float)


def run_seed(disks: int, days: int, seed: int) -> dict:
    fleet = simulate_fleet(FleetSpec(disks=disks, days=days, seed=seed))
    config = TrainingConfig(seed=seed)
    started = time.perf_counter()
    model, ours = train_disk_model(fleet, config)
    train_s = time.perf_counter() - started
    featured = label_rows(add_features(fleet), config.horizon_days)
    train_ids, val_ids, test_ids = split_disks(featured, config)
    test = featured[featured["disk"].isin(test_ids)]
    started = time.perf_counter()
    model.score(test)
    score_us = (time.perf_counter() - started) / len(test) * 1e6
    levels = RuleScorer([f"smart_{a}" for a in COUNTER_ATTRIBUTES])
    deltas = RuleScorer([f"smart_{a}_d7" for a in COUNTER_ATTRIBUTES])
    poh = fit_classifier(featured[featured["disk"].isin(train_ids)], ["smart_9"], seed)
    healthy_val = featured[featured["disk"].isin(val_ids) & featured["days_to_failure"].isna()]
    poh.threshold = threshold_for_far(poh.score(healthy_val), config.false_alarm_rate)
    return {
        "vigil model": ours,
        "rule: any of 5/187/188/197/198 > 0": evaluate(levels, test, config.horizon_days),
        "rule: any of them grew in 7 days": evaluate(deltas, test, config.horizon_days),
        "model on power-on hours only": evaluate(poh, test, config.horizon_days),
        "_train_s": train_s,
        "_score_us": score_us,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--disks", type=int, default=3000)
    parser.add_argument("--days", type=int, default=120)
    parser.add_argument("--seeds", default="0,1,2")
    add_record_option(parser)
    args = parser.parse_args()
    seeds = [int(s) for s in args.seeds.split(",")]
    runs = [run_seed(args.disks, args.days, s) for s in seeds]
    names = [k for k in runs[0] if not k.startswith("_")]
    mean = lambda values: statistics.fmean(values)  # noqa: E731
    lines = [
        "## AIOps: disk failure prediction (simulated fleet)",
        "",
        f"Machine: {machine_summary()}. Date: {utc_now()}. Command: `.venv/bin/python bench/aiops/disk.py "
        f"--disks {args.disks} --days {args.days} --seeds {args.seeds}`.",
        "",
        f"{args.disks} disks x {args.days} days per seed, {len(seeds)} seeds (means; min-max in brackets). "
        "Held-out test disks (20 %), split by disk. Detection = share of failing disks alarmed 1-20 days "
        "before failure; false alarms per healthy disk-day and per healthy disk over the whole period. "
        "The first four columns use each scorer's own alarm rule (the model's threshold targets 0.1 % "
        "false alarms per disk-day on *validation* disks, so the test rate varies); the last two set the "
        "threshold on the test disks' healthy days at exactly 0.1 % (the ROC point papers report; a 0/1 "
        "rule that alarms on more than 0.1 % of healthy days detects nothing there).",
        "",
        "| scorer | detection | false alarms / disk-day | false alarms / disk | median lead (days) "
        "| detection at exactly 0.1 % / disk-day | vs vigil |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    ours = mean([r["vigil model"].detection_rate_at_test_far for r in runs])
    for name in names:
        det = [r[name].detection_rate for r in runs]
        far_day = [r[name].false_alarm_rate_disk_days for r in runs]
        far_disk = [r[name].false_alarm_rate_disks for r in runs]
        leads = [r[name].median_lead_days for r in runs if r[name].median_lead_days is not None]
        lead = f"{mean(leads):.1f}" if leads else "n/a"
        at_far = [r[name].detection_rate_at_test_far for r in runs]
        ratio = f"{mean(at_far) / ours:.2f}x" if ours else "n/a"
        lines.append(
            f"| {name} | {mean(det):.1%} [{min(det):.1%}-{max(det):.1%}] | {mean(far_day):.3%} | "
            f"{mean(far_disk):.2%} | {lead} | {mean(at_far):.1%} [{min(at_far):.1%}-{max(at_far):.1%}] | {ratio} |"
        )
    patterns = sorted(runs[0]["vigil model"].detection_by_pattern)
    by_pattern = ", ".join(
        f"{p} {mean([r['vigil model'].detection_by_pattern.get(p, 0.0) for r in runs]):.0%}" for p in patterns
    )
    lines += [
        "",
        f"vigil model detection by failure pattern: {by_pattern}. Failing test disks per seed: "
        f"{', '.join(str(r['vigil model'].test_failing_disks) for r in runs)}.",
        f"Training (features + fit + threshold + evaluation): {mean([r['_train_s'] for r in runs]):.1f} s per fleet; "
        f"scoring: {mean([r['_score_us'] for r in runs]):.2f} us per disk-day.",
        "",
        "The rules catch more failures only by alarming on a large share of healthy disks (stable nonzero "
        "counts are common); power-on hours alone catch (almost) nothing: the model's skill is not age.",
    ]
    text = "\n".join(lines)
    print(text)
    if args.record:
        write_section(REPO / "docs" / "benchmarks.md", "aiops-disk", text)


if __name__ == "__main__":
    np.seterr(all="ignore")
    main()
