"""CSV and Parquet history files: long and wide layouts, timestamps, and errors that name file and line."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from vigil.aiops.history.files import parse_selector, read_series_file
from vigil.aiops.history.openmetrics import format_value, write_openmetrics
from vigil.aiops.history.series import HistoryError


def test_long_csv_with_labels_groups_series(tmp_path):
    path = tmp_path / "util.csv"
    path.write_text(
        "timestamp,value,metric,node,gpu\n"
        "1700000000,0.5,vigil_gpu_utilization_ratio,n1,0\n"
        "1700000000,0.7,vigil_gpu_utilization_ratio,n1,1\n"
        "1700000300,,vigil_gpu_utilization_ratio,n1,0\n"
        "1700000600,0.6,vigil_gpu_utilization_ratio,n1,0\n"
    )
    series = read_series_file(path)
    assert [(s.name, s.labels) for s in series] == [
        ("vigil_gpu_utilization_ratio", {"gpu": "0", "node": "n1"}),
        ("vigil_gpu_utilization_ratio", {"gpu": "1", "node": "n1"}),
    ]
    assert series[0].timestamps.tolist() == [1700000000, 1700000300, 1700000600]
    assert np.isnan(series[0].values[1]) and series[0].values[2] == 0.6


def test_plain_timestamp_value_csv_is_named_after_the_file_and_reads_dates(tmp_path):
    path = tmp_path / "nyc-taxi.csv"
    path.write_text("timestamp,value\n2014-07-01 00:00:00,10844\n2014-07-01 00:30:00,8127\n")
    (series,) = read_series_file(path)
    assert series.name == "nyc_taxi" and series.labels == {}
    assert series.timestamps.tolist() == [1404172800.0, 1404174600.0]


def test_millisecond_timestamps_are_recognised(tmp_path):
    path = tmp_path / "ms.csv"
    path.write_text("timestamp,value\n1700000000000,1\n1700000060000,2\n")
    assert read_series_file(path)[0].timestamps.tolist() == [1700000000.0, 1700000060.0]


def test_wide_csv_columns_may_be_selectors(tmp_path):
    path = tmp_path / "wide.csv"
    path.write_text('timestamp,temp,"errs_total{node=""a"",gpu=""0""}"\n0,40,1\n60,41,2\n')
    temp, errs = read_series_file(path)
    assert temp.name == "temp" and temp.values.tolist() == [40, 41] and not temp.is_counter
    assert errs.name == "errs_total" and errs.labels == {"node": "a", "gpu": "0"} and errs.is_counter


def test_parquet_long_layout(tmp_path):
    path = tmp_path / "h.parquet"
    pd.DataFrame({"timestamp": [0.0, 60.0], "value": [1.0, 2.0], "node": ["x", "x"]}).to_parquet(path)
    (series,) = read_series_file(path)
    assert series.name == "h" and series.labels == {"node": "x"} and series.values.tolist() == [1, 2]


@pytest.mark.parametrize(
    "content,message",
    [
        ("timestamp,value\n0,1\n60,abc\n", r"bad\.csv: line 3: value 'abc' is not a number"),
        ("timestamp,value\n0,1\nyesterday-ish,2\n", r"bad\.csv: line 3: timestamp 'yesterday-ish'"),
        ("time,value\n0,1\n", r"bad\.csv: no 'timestamp' column"),
        ("", r"bad\.csv: empty file"),
        ("timestamp,value\n", r"bad\.csv: no data rows"),
        ('timestamp,"bad{x=1}"\n0,1\n', r"bad\.csv: column 'bad\{x=1\}'"),
    ],
)
def test_bad_csv_names_file_and_line(tmp_path, content, message):
    path = tmp_path / "bad.csv"
    path.write_text(content)
    with pytest.raises(HistoryError, match=message):
        read_series_file(path)


def test_bad_files_and_types(tmp_path):
    with pytest.raises(HistoryError, match="no such file"):
        read_series_file(tmp_path / "missing.csv")
    (tmp_path / "x.json").write_text("{}")
    with pytest.raises(HistoryError, match="unknown file type '.json'"):
        read_series_file(tmp_path / "x.json")
    (tmp_path / "x.parquet").write_text("not parquet")
    with pytest.raises(HistoryError, match="x.parquet: not a readable Parquet file"):
        read_series_file(tmp_path / "x.parquet")


def test_selector_parsing_unescapes_quotes():
    assert parse_selector('m{a="x\\"y",b="2"}') == ("m", {"a": 'x"y', "b": "2"})


def test_openmetrics_groups_families_escapes_and_ends_with_eof(tmp_path):
    path = tmp_path / "out.om"
    written = write_openmetrics(
        path,
        [
            ("a", {"k": 'q"\\\n'}, [2.0, 1.0], [0.5, 1.0]),
            ("b_total", {}, [1.0], [3.0]),
            ("a", {"k": "z"}, [1.0, 2.0], [np.nan, 2.0]),  # interleaved family, NaN is a gap
        ],
        types={"b_total": "counter"},
    )
    assert written == 4
    assert path.read_text().splitlines() == [
        "# HELP a a",
        "# TYPE a gauge",
        'a{k="q\\"\\\\\\n"} 1 1',
        'a{k="q\\"\\\\\\n"} 0.5 2',
        'a{k="z"} 2 2',
        "# HELP b b_total",
        "# TYPE b counter",
        "b_total 3 1",
        "# EOF",
    ]
    assert format_value(0.1) == "0.1" and format_value(1_700_000_000.25) == "1700000000.25"
