"""`vigil aiops detect --labels points|alarms`: point labels of whole anomalous stretches beside the alarms."""

import csv
import io
import json
import math
from datetime import datetime, timedelta

import numpy as np
import pytest
from click.testing import CliRunner

from vigil.aiops.detect import detector_for, labelling_of
from vigil.aiops.detect.points import PointsParameters, VigilPointsDetector
from vigil.cli import main

DAY_S = 86400


def seasonal(tmp_path, step_s=300, days=8, seed=4, shift_at_day=None, stretch=None, gaps=()):
    """A daily sine around 100 (amplitude 20, noise 1) every `step_s` seconds; optionally +15 from
    `shift_at_day` on (a lasting level shift), `stretch` = (first, end, change) rows moved, `gaps` rows
    dropped. Returns the file and the row index of every written row (its slot before the gaps)."""
    per_day = DAY_S // step_s
    n = days * per_day
    rng = np.random.default_rng(seed)
    rows = np.arange(n)
    values = 100 + 20 * np.sin(2 * np.pi * rows / per_day) + rng.normal(0, 1, n)
    if shift_at_day is not None:
        values[int(shift_at_day * per_day):] += 15
    if stretch is not None:
        first, end, change = stretch
        values[first:end] += change
    kept = np.ones(n, dtype=bool)
    for first, end in gaps:
        kept[first:end] = False
    start = datetime(2024, 3, 1)
    lines = ["timestamp,value"] + [f"{start + timedelta(seconds=int(i) * step_s):%Y-%m-%d %H:%M:%S},{values[i]:.4f}"
                                   for i in rows[kept]]
    path = tmp_path / "kpi.csv"
    path.write_text("\n".join(lines) + "\n")
    return path, rows[kept]


def detect(*args):
    result = CliRunner().invoke(main, ["aiops", "detect", *map(str, args)])
    assert result.exit_code == 0, result.output
    return result.stdout


def labelled(stdout, slots):
    rows = list(csv.DictReader(io.StringIO(stdout)))
    assert len(rows) == len(slots)
    return {int(slot) for slot, row in zip(slots, rows) if row["label"] == "1"}


@pytest.mark.parametrize("step_s", [300, 60])
def test_points_label_a_whole_stretch_after_a_level_shift_and_across_gaps(tmp_path, step_s):
    per_day, hour = DAY_S // step_s, 3600 // step_s
    shift = int(3.3 * per_day)  # a lasting level shift, two and a half days before the stretch
    first, end = 6 * per_day + 100, 6 * per_day + 100 + 3 * hour // 2  # 90 minutes 12 below normal
    gaps = [(4 * per_day + 10, 4 * per_day + 40), (5 * per_day, 5 * per_day + 3), (first - 20, first - 12)]
    path, slots = seasonal(tmp_path, step_s, shift_at_day=3.3, stretch=(first, end, -12), gaps=gaps)
    labels = labelled(detect(path, "--labels", "points"), slots)
    assert set(range(first, end)) <= labels  # the whole stretch, every point
    assert not labels & set(range(end, end + 6 * hour))  # and it ends with the stretch
    # the level shift is labelled where it starts, held at most max_hold_s (2 h), then it is the normal
    max_hold = int(PointsParameters().max_hold_s // step_s)
    assert shift in labels
    stray = labels - set(range(first, end)) - set(range(shift, shift + max_hold + 2))
    assert len(stray) <= 2, sorted(stray)  # noise at about 1 in 1,000 points


@pytest.mark.parametrize("step_s", [300, 60])
def test_points_label_nothing_on_a_clean_seasonal_series(tmp_path, step_s):
    path, slots = seasonal(tmp_path, step_s, gaps=[(3 * DAY_S // step_s, 3 * DAY_S // step_s + 25)])
    assert labelled(detect(path, "--labels", "points"), slots) == set()


def test_alarms_are_todays_output_and_points_differ(tmp_path):
    path, slots = seasonal(tmp_path, shift_at_day=3.3, stretch=(1828, 1846, -12))
    default = detect(path)
    assert detect(path, "--labels", "alarms") == default
    assert detect(path, "--detector", "vigil", "--labels", "alarms") == default
    assert detect(path, "--detector", "vigil-points", "--labels", "alarms") == default
    alarms, points = labelled(default, slots), labelled(detect(path, "--labels", "points"), slots)
    assert len(alarms) < len(points) and set(range(1828, 1846)) <= points
    # evt's pair: points is evt as it always was, alarms is evt-alarms
    assert detect(path, "--detector", "evt", "--labels", "points") == detect(path, "--detector", "evt")
    assert detect(path, "--detector", "evt", "--labels", "alarms") == detect(path, "--detector", "evt-alarms")


def test_json_says_which_detector_and_labelling(tmp_path):
    path, _ = seasonal(tmp_path, days=3)
    doc = json.loads(detect(path, "--labels", "points", "--format", "json"))
    assert doc["detector"] == "vigil-points" and doc["labels"] == "points"
    assert doc["warmup_rows"] == 288  # one day at 5 minutes
    doc = json.loads(detect(path, "--format", "json"))
    assert doc["detector"] == "vigil" and doc["labels"] == "alarms"


def test_explanations_name_the_test_and_the_hold(tmp_path):
    path, slots = seasonal(tmp_path, stretch=(1828, 1846, -12))
    rows = list(csv.DictReader(io.StringIO(detect(path, "--labels", "points", "--explain"))))
    why = {int(slot): row["explanation"] for slot, row in zip(slots, rows) if row["label"] == "1"}
    assert why[1828].startswith(("local: drop", "daily: drop")) and "normally makes" in why[1828]
    assert any(text.startswith("held: below") for text in why.values())


@pytest.mark.parametrize("value, expected", [("both", "'both' is not one of 'points', 'alarms'"), ("", "")])
def test_a_bad_labels_value_is_a_usage_error(tmp_path, value, expected):
    path, _ = seasonal(tmp_path, days=1)
    result = CliRunner().invoke(main, ["aiops", "detect", str(path), "--labels", value])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "--labels" in result.output and expected in result.output


def test_alarms_from_a_detector_without_them_is_a_usage_error(tmp_path):
    path, _ = seasonal(tmp_path, days=1)
    result = CliRunner().invoke(main, ["aiops", "detect", str(path), "--detector", "windowed-gaussian",
                                       "--labels", "alarms"])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "has no alarms" in result.output
    assert detect(path, "--detector", "windowed-gaussian", "--labels", "points") == detect(
        path, "--detector", "windowed-gaussian")


def test_pairs_map_both_ways():
    assert detector_for("vigil", "points") == "vigil-points" and detector_for("vigil-points", "alarms") == "vigil"
    assert detector_for("evt-alarms", "points") == "evt" and detector_for("vigil", None) == "vigil"
    assert [labelling_of(n) for n in ("vigil", "vigil-points", "evt", "evt-alarms", "null")] == [
        "alarms", "points", "points", "alarms", "points"]
    with pytest.raises(ValueError, match="unknown labels"):
        detector_for("vigil", "spikes")


def test_sensitivity_moves_the_label_line_by_the_documented_odds():
    assert VigilPointsDetector.create(sensitivity=0.5).params.k == pytest.approx(PointsParameters().k)
    assert VigilPointsDetector.create(sensitivity=1.0).params.k == pytest.approx(PointsParameters().k / 2)
    assert VigilPointsDetector.create(sensitivity=0.0).params.k == pytest.approx(PointsParameters().k * 2)
    with pytest.raises(ValueError):
        VigilPointsDetector.create(warmup=20)


def test_a_score_passes_one_half_exactly_where_a_point_is_labelled(tmp_path):
    path, _ = seasonal(tmp_path, shift_at_day=3.3, stretch=(1828, 1846, -12))
    rows = list(csv.DictReader(io.StringIO(detect(path, "--labels", "points"))))
    assert all((float(r["anomaly_score"]) >= 0.5) == (r["label"] == "1") for r in rows)
    assert not math.isnan(sum(float(r["anomaly_score"]) for r in rows))
