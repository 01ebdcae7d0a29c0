"""Golden files under tests/golden/: generated output compared byte for byte with a reviewed copy.

`VIGIL_UPDATE_GOLDEN=1 .venv/bin/pytest <test file>` rewrites the copies instead; review with `git diff tests/golden`.
"""

from __future__ import annotations

import os
from pathlib import Path

GOLDEN = Path(__file__).parent / "golden"
UPDATE = os.environ.get("VIGIL_UPDATE_GOLDEN") == "1"


def check_golden(name: str, text: str) -> None:
    """Compare `text` with tests/golden/`name`; with VIGIL_UPDATE_GOLDEN=1 rewrite that file instead."""
    path = GOLDEN / name
    if UPDATE:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text.encode("utf-8"))
    assert path.exists(), f"no golden file {path}; create it with VIGIL_UPDATE_GOLDEN=1 and review it"
    assert path.read_bytes() == text.encode("utf-8"), f"{name} differs; rerun with VIGIL_UPDATE_GOLDEN=1 and review"
