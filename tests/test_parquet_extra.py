"""Parquet history files need the `parquet` extra (pyarrow); without it the CLI says how to get it.

The CLI runs in a real subprocess. For "not installed", `sys.modules["pyarrow"] = None` is set before
vigil starts, which makes every `import pyarrow…` raise ImportError exactly as on a core install.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from vigil.aiops.baseline import synthetic

VIGIL = str(Path(sys.executable).with_name("vigil"))
WITHOUT_PYARROW = "import sys; sys.modules['pyarrow'] = None; from vigil.cli import main; main(prog_name='vigil')"


@pytest.fixture
def history_parquet(tmp_path) -> Path:
    stamps = synthetic.grid(days=14)
    values = synthetic.GENERATORS["periodic"](stamps, np.random.default_rng(0))
    path = tmp_path / "history.parquet"
    pd.DataFrame({"timestamp": stamps, "value": values, "node": "node-1"}).to_parquet(path)
    return path


def train(history: Path, model_dir: Path, *, pyarrow: bool) -> subprocess.CompletedProcess:
    launcher = [VIGIL] if pyarrow else [sys.executable, "-P", "-c", WITHOUT_PYARROW]
    return subprocess.run([*launcher, "aiops", "train", "--input", str(history), "--model-dir", str(model_dir)],
                          capture_output=True, text=True, timeout=120)


def test_without_pyarrow_a_parquet_file_is_a_clear_error_naming_the_extra(history_parquet, tmp_path):
    result = train(history_parquet, tmp_path / "model", pyarrow=False)
    assert result.returncode == 1, result.stdout + result.stderr
    assert result.stderr.startswith(f"Error: {history_parquet}: reading Parquet needs pyarrow"), result.stderr
    assert "pip install 'vigil[parquet]'" in result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "model").exists()


def test_with_the_extra_the_same_file_trains(history_parquet, tmp_path):
    result = train(history_parquet, tmp_path / "model", pyarrow=True)
    assert result.returncode == 0, result.stdout + result.stderr
    assert (tmp_path / "model" / "baselines.json").is_file()
