"""`vigil aiops evaluate kpi-synth` and `vigil aiops evaluate nab` as a user runs them: held-out scores,
settings chosen on the other half. Small selections keep them fast; the full runs are in the docs."""

import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from vigil.aiops.kpi_synth import make_benchmark
from vigil.aiops.nab.corpus import DEFAULT_NAB_DIR
from vigil.cli import main

KPI = ["aiops", "evaluate", "kpi-synth", "--curve", "stable", "--kind", "level_shift", "--kind", "spike", "--per-half", "1"]


def run(*args):
    return CliRunner().invoke(main, list(args))


def test_kpi_synth_json_reports_the_setting_chosen_on_tune_scored_on_heldout():
    result = run(*KPI, "--sensitivity", "0.25", "--sensitivity", "0.75", "--variance-gate", "1", "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["benchmark"] == "kpi-synth" and report["detector"] == "evt"
    assert set(report["tune"]) == {"sensitivity 0.25, variance gate 1", "sensitivity 0.75, variance gate 1"}
    assert report["min_precision"] == 0.952  # the rule: the best F1 among the settings this precise
    tune = {name: s["point_adjusted"] for name, s in report["tune"].items()}
    precise = [name for name, s in tune.items() if s["precision"] >= 0.952]
    best = (max(precise, key=lambda name: tune[name]["f1"]) if precise
            else max(tune, key=lambda name: tune[name]["precision"]))  # none that precise: the most precise
    assert report["chosen"] == best
    heldout = report["heldout"]
    assert set(heldout) >= {"point_adjusted", "strict", "point_adjusted_by_kind", "point_adjusted_by_curve"}
    assert set(heldout["point_adjusted_by_kind"]) == {"level_shift", "spike"}
    # the counts cover exactly the held-out series' labelled points
    series = [s for s in make_benchmark("heldout", per_half=1) if s.curve == "stable" and s.kind in ("level_shift", "spike")]
    labelled = sum(int(np.sum(s.labels)) for s in series)
    for scoring in ("point_adjusted", "strict"):
        counts = heldout[scoring]
        assert counts["tp"] + counts["fn"] == labelled
        assert 0.0 <= counts["f1"] <= 1.0
    assert heldout["series"] == len(series) and heldout["points"] == sum(len(s) for s in series)
    assert heldout["point_adjusted"]["f1"] > 0.8  # a step of 4-8 sigma on a flat curve is found


def test_kpi_synth_text_prints_both_scores_for_the_heldout_half():
    result = run(*KPI, "--sensitivity", "medium")
    assert result.exit_code == 0, result.output
    assert "held-out half, sensitivity 0.5" in result.stdout
    heldout = result.stdout.split("held-out half")[1]
    assert "point-adjusted P" in heldout and "strict P" in heldout and "level_shift" in heldout


def test_kpi_synth_tune_only_chooses_without_scoring_the_heldout_half():
    result = run(*KPI, "--sensitivity", "0.5", "--sensitivity", "0.75", "--variance-gate", "0.5",
                 "--min-precision", "0", "--tune-only")
    assert result.exit_code == 0, result.output
    assert "chosen: sensitivity" in result.stdout and "held-out not scored" in result.stdout
    assert "held-out half" not in result.stdout


def test_kpi_synth_tune_half_has_six_seeds_per_curve_and_kind_by_default_and_can_be_sized():
    # KPI: one curve, two kinds, one held-out seed each (--per-half 1)
    args = (*KPI, "--sensitivity", "0.5", "--sensitivity", "0.75", "--variance-gate", "1", "--json", "--tune-only")
    default = json.loads(run(*args).stdout)
    assert {s["series"] for s in default["tune"].values()} == {2 * 6}
    small = json.loads(run(*args, "--tune-per-half", "1").stdout)
    assert {s["series"] for s in small["tune"].values()} == {2 * 1}
    assert small["heldout"] is None


def test_kpi_synth_rejects_a_bad_sensitivity():
    result = run(*KPI, "--sensitivity", "loud")
    assert result.exit_code == 2 and "loud" in result.output and "Traceback" not in result.output


@pytest.fixture
def two_file_corpus(tmp_path):
    """A real NAB sub-corpus: two of its series, their labels, NAB's cost profiles."""
    nab = Path(os.environ.get("NAB_DIR", DEFAULT_NAB_DIR))
    names = ["artificialWithAnomaly/art_daily_jumpsup.csv", "artificialWithAnomaly/art_daily_jumpsdown.csv"]  # one per half
    windows = json.loads((nab / "labels" / "combined_windows.json").read_text())
    root = tmp_path / "nab"
    for name in names:
        (root / "data" / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(nab / "data" / name, root / "data" / name)
    (root / "labels").mkdir()
    (root / "labels" / "combined_windows.json").write_text(json.dumps({n: windows[n] for n in names}))
    for sub in ("config/profiles.json", "results/published_final_results.json"):
        (root / sub).parent.mkdir(exist_ok=True)
        shutil.copy(nab / sub, root / sub)
    return root


def test_evaluate_nab_scores_the_evt_detector_held_out(two_file_corpus):
    result = run("aiops", "evaluate", "nab", "--nab-dir", str(two_file_corpus), "--detector", "evt", "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    (evt,) = report["results"]
    assert evt["detector"] == "evt" and evt["parameters"]["risk"] == pytest.approx(1e-4)
    standard = evt["profiles"]["standard"]
    assert len(standard["holdout_thresholds"]) == 2 and len(standard["holdout_halves"]) == 2
    assert report["points"] == 2 * 4032
