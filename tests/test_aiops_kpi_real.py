"""The AIOps Challenge 2018 KPI files and the challenge's scoring (aiops/kpi_real)."""

import gzip

import numpy as np
import pytest

from vigil.aiops.detect.series import read_series
from vigil.aiops.kpi_real import KpiFileError, challenge_counts, halves, read_dir, read_kpi, script_counts
from vigil.aiops.kpi_synth.scoring import Counts

# two labelled stretches: rows 2-4 (3 points) and rows 8-19 (12 points)
LABELS = np.array([0, 0, 1, 1, 1, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1], dtype=bool)
# flags: row 0 (outside: a false positive), row 4 (the first stretch's 3rd point), row 15 (the second
# stretch's 8th point: one too late for the README's first 7, in time for the script's onset + 7)
FLAGS = np.zeros(20, dtype=bool)
FLAGS[[0, 4, 15]] = True


def test_the_challenge_rule_by_hand():
    counts = challenge_counts(FLAGS, LABELS)
    # stretch 1 found in full (3 TP), stretch 2 missed in full (12 FN) though row 15 is flagged: a flag
    # inside a missed stretch is not a false positive either; row 0 is the one FP
    assert counts == Counts(tp=3, fp=1, fn=12)
    assert counts.precision == pytest.approx(3 / 4) and counts.recall == pytest.approx(3 / 15)
    assert counts.f1 == pytest.approx(2 * 0.75 * 0.2 / 0.95)  # 0.3158
    # the seventh point of a stretch still counts
    seventh = np.zeros(20, dtype=bool)
    seventh[14] = True
    assert challenge_counts(seventh, LABELS) == Counts(tp=12, fp=0, fn=3)


def test_the_organisers_script_rule_allows_one_more_point_on_the_regular_grid():
    stamps = np.arange(20) * 60
    assert script_counts(FLAGS, LABELS, stamps) == Counts(tp=15, fp=1, fn=0)
    # two missing minutes inside the second stretch (after row 9) split it on the grid: slots 8-9 (2
    # points, no flag: missed) and slots 12-21 (10 points), where row 15 sits at slot 17, its 6th point
    gapped = np.where(np.arange(20) > 9, stamps + 120, stamps)
    assert script_counts(FLAGS, LABELS, gapped) == Counts(tp=3 + 10, fp=1, fn=2)


def test_counts_pool_over_series_before_the_ratios():
    first = challenge_counts(FLAGS, LABELS)
    second = challenge_counts(LABELS, LABELS)  # every stretch found, nothing else flagged
    pooled = first + second
    assert pooled == Counts(tp=18, fp=1, fn=12)
    assert pooled.f1 == pytest.approx(2 * 18 / (2 * 18 + 1 + 12))


def test_halves_alternate_in_name_order():
    assert halves(["c", "a", "d", "b", "e"]) == (["a", "c", "e"], ["b", "d"])


def write_kpi(path, rows, header="timestamp,value,label"):
    text = "\n".join([header, *rows]) + "\n"
    if path.suffix == ".gz":
        with gzip.open(path, "wt") as handle:
            handle.write(text)
    else:
        path.write_text(text)
    return path


def test_a_kpi_file_reads_sorted_and_writes_the_detect_input(tmp_path):
    path = write_kpi(tmp_path / "abc.csv.gz", ["1496177640,2.5,1", "1496177580,1.25,0", "1496177700,3,0"])
    kpi = read_kpi(path)
    assert kpi.name == "abc" and len(kpi) == 3
    assert kpi.timestamps.tolist() == [1496177580, 1496177640, 1496177700]
    assert kpi.values.tolist() == [1.25, 2.5, 3.0] and kpi.labels.tolist() == [False, True, False]
    series = read_series(kpi.write_series(tmp_path / "abc.csv"), ordered=True)
    assert series.timestamps == ["2017-05-30 20:53:00", "2017-05-30 20:54:00", "2017-05-30 20:55:00"]
    assert series.values.tolist() == [1.25, 2.5, 3.0]


def test_bad_kpi_files_say_which_file(tmp_path):
    with pytest.raises(KpiFileError, match="header must start"):
        read_kpi(write_kpi(tmp_path / "x.csv", ["1,2,0"], header="time,value"))
    with pytest.raises(KpiFileError, match="y.csv"):
        read_kpi(write_kpi(tmp_path / "y.csv", ["1,abc,0"]))
    (tmp_path / "empty").mkdir()
    with pytest.raises(KpiFileError, match="no KPI files"):
        read_dir(tmp_path / "empty")
