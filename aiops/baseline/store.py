"""The model store: one human-readable, versioned JSON file per model directory.

`DIR/baselines.json` holds a header (format, schema version, generation, training settings) and one
entry per series, one entry per line so diffs stay readable. Floats are written with 10 significant
digits, so the same training data always gives byte-identical files. Writes are atomic (temporary file
then rename), so `serve` never reads half a file.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

STORE_FILE = "baselines.json"
FORMAT = "vigil-baselines"
SCHEMA_VERSION = 1


class StoreError(Exception):
    """The model store is missing, unreadable or of an unknown version (message says which)."""


def _round(value):
    """Floats to 10 significant digits (non-finite to null); containers recursively."""
    if isinstance(value, float):
        return float(f"{value:.10g}") if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _round(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_round(v) for v in value]
    return value


def _dumps(value) -> str:
    return json.dumps(_round(value), sort_keys=True, separators=(",", ":"), allow_nan=False)


def store_path(model_dir: str | Path) -> Path:
    return Path(model_dir) / STORE_FILE


def save_store(model_dir: str | Path, entries: list[dict], settings: dict) -> Path:
    """Write the store; the generation number goes up by one over the previous file's."""
    model_dir = Path(model_dir)
    model_dir.mkdir(parents=True, exist_ok=True)
    path = store_path(model_dir)
    generation = 1
    if path.exists():
        try:
            generation = int(load_store(model_dir)["generation"]) + 1
        except (StoreError, KeyError, ValueError):
            generation = 1
    header = {"format": FORMAT, "schema_version": SCHEMA_VERSION, "generation": generation, **settings}
    lines = ["{"]
    for key in sorted(header):
        lines.append(f"  {json.dumps(key)}: {_dumps(header[key])},")
    lines.append('  "series": [')
    # sorted by identity, then by text so even duplicate identities come out in one order
    rows = sorted((e["metric"], sorted(e["labels"].items()), _dumps(e)) for e in entries)
    lines.append(",\n".join(f"    {row[2]}" for row in rows))
    lines.append("  ]")
    lines.append("}")
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text("\n".join(lines) + "\n", encoding="utf-8")
    os.replace(tmp, path)
    return path


def load_store(model_dir: str | Path) -> dict:
    """Read and check the store; raise StoreError with the reason."""
    path = store_path(model_dir)
    if not path.is_file():
        raise StoreError(f"{path}: no model store (run `vigil aiops train --model-dir {model_dir}` first)")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise StoreError(f"{path}: unreadable model store: {exc}") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise StoreError(f"{path}: not a vigil baseline store (format {data.get('format') if isinstance(data, dict) else None!r})")
    if data.get("schema_version") != SCHEMA_VERSION:
        raise StoreError(f"{path}: schema_version {data.get('schema_version')!r} is not supported (this vigil reads {SCHEMA_VERSION})")
    if not isinstance(data.get("series"), list):
        raise StoreError(f"{path}: 'series' must be a list")
    return data
