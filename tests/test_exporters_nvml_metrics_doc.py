"""docs/metrics.md is generated from the MetricSpec lists and must match the code."""

from __future__ import annotations

import subprocess
import sys

from vigil.exporters import metrics_doc
from vigil.exporters.gpu_specs import SPECS


def test_committed_metrics_page_is_up_to_date() -> None:
    result = subprocess.run([sys.executable, "-m", "vigil.exporters.metrics_doc", "--check"], capture_output=True, timeout=60)
    assert result.returncode == 0, result.stderr.decode()


def test_every_gpu_metric_is_documented_with_its_labels() -> None:
    page = metrics_doc.render()
    for spec in SPECS:
        row = next(line for line in page.splitlines() if line.startswith(f"| `{spec.name}` |"))
        assert all(f"`{label}`" in row for label in spec.labels), spec.name


def test_specs_are_declared_once_with_base_units() -> None:
    names = [spec.name for spec in SPECS]
    assert len(names) == len(set(names))
    for spec in SPECS:
        assert spec.name.startswith(("vigil_gpu_", "vigil_node_", "vigil_exporter_"))
        assert spec.name.endswith("_total") == (spec.type == "counter"), spec.name
        if spec.unit and spec.unit != "ratio":
            assert f"_{spec.unit}" in spec.name, spec.name
