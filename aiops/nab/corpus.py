"""Loading the Numenta Anomaly Benchmark corpus: series, labelled windows, profiles, published results.

The corpus lives outside the repository (`../shared/data/nab` relative to the repository root by
default); every entry point takes its location as an argument and fails with `NabCorpusError`, whose
message says what is missing, when it is not there.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from vigil.aiops.detect.series import Series, SeriesFormatError, read_series

#: where the corpus is expected, relative to the repository root (the checkout has `shared/` beside it)
DEFAULT_NAB_DIR = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "nab"


class NabCorpusError(RuntimeError):
    """The NAB corpus is missing or malformed; the message says which file and what to do."""


@dataclass(frozen=True)
class NabFile:
    """One corpus series with its anomaly windows as inclusive row-index ranges."""

    name: str  # e.g. "realKnownCause/nyc_taxi.csv"
    series: Series
    windows: list[tuple[int, int]]

    @property
    def category(self) -> str:
        return self.name.split("/", 1)[0]


@dataclass(frozen=True)
class NabCorpus:
    root: Path
    files: list[NabFile]
    profiles: dict[str, dict[str, float]]  # profile name -> cost matrix
    published: dict[str, dict[str, float]]  # detector -> profile -> normalised score

    @property
    def n_points(self) -> int:
        return sum(len(f.series) for f in self.files)


def _read_json(path: Path):
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise NabCorpusError(f"{path} is missing: is --nab-dir pointing at a NAB checkout?") from None
    except (OSError, ValueError) as exc:
        raise NabCorpusError(f"{path}: cannot read: {exc}") from None


def _window_rows(name: str, stamps: np.ndarray, limits: list[list[str]]) -> list[tuple[int, int]]:
    """Turn [start, end] timestamp pairs into inclusive row ranges.

    Window limits are timestamps of rows in the file; like NAB, the row is the first one carrying that
    timestamp (not a sorted search: a few files have timestamps that step back).
    """
    first_row: dict[np.datetime64, int] = {}
    for i, stamp in enumerate(stamps):
        first_row.setdefault(stamp, i)
    rows = []
    for start, end in limits:
        try:
            first = first_row[np.datetime64(start.replace(" ", "T"), "us")]
            last = first_row[np.datetime64(end.replace(" ", "T"), "us")]
        except KeyError as exc:
            raise NabCorpusError(f"window {start} .. {end} of {name}: no row at {exc.args[0]}") from None
        if first > last:
            raise NabCorpusError(f"window {start} .. {end} of {name} ends before it starts")
        rows.append((first, last))
    return rows


def load_corpus(root: str | Path = DEFAULT_NAB_DIR, only: list[str] | None = None) -> NabCorpus:
    """Read the corpus under `root` (files listed in `labels/combined_windows.json`).

    `only` restricts loading to those file names (e.g. for a quick subset run).
    """
    root = Path(root)
    if not (root / "data").is_dir():
        raise NabCorpusError(
            f"NAB corpus not found at {root} (no data/ folder); pass --nab-dir pointing at the NAB corpus "
            "(the folder holding data/, labels/, config/ and results/)"
        )
    windows = _read_json(root / "labels" / "combined_windows.json")
    profiles = {name: body["CostMatrix"] for name, body in _read_json(root / "config" / "profiles.json").items()}
    published = _read_json(root / "results" / "published_final_results.json")
    names = sorted(windows)
    if only is not None:
        unknown = sorted(set(only) - set(names))
        if unknown:
            raise NabCorpusError(f"not in the corpus labels: {', '.join(unknown)}")
        names = [n for n in names if n in set(only)]
    files = []
    for name in names:
        try:
            series = read_series(root / "data" / name)
        except SeriesFormatError as exc:
            raise NabCorpusError(str(exc)) from None
        stamps = np.array([s.replace(" ", "T") for s in series.timestamps], dtype="datetime64[us]")
        files.append(NabFile(name, series, _window_rows(name, stamps, windows[name])))
    return NabCorpus(root, files, profiles, published)
