"""Render a kustomization of the generated layout into its objects.

`kubectl kustomize` (kustomize built into kubectl) is the real thing; Debian has no kustomize package
and the PyPI bindings need Python 3.14, so where no kubectl is installed `render_overlay` applies the
layout's own kustomizations in Python: `resources` (files or folders with a kustomization.yaml), JSON
6902 `patches` with `op: replace`, and strategic-merge patches that are only `$patch: delete` (an object
the overlay removes), the two kinds the generator writes (`sharded.replace`, `sharded.delete`). The
tests check that both give the same objects where kubectl is present. Anything else is refused.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import yaml

_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when present: the dashboards are large


class KustomizeError(Exception):
    """A kustomization this renderer does not handle, or a patch that does not apply."""


def kubectl() -> str | None:
    return shutil.which("kubectl")


def render_with_kubectl(folder: Path, binary: str) -> list[dict]:
    result = subprocess.run([binary, "kustomize", str(folder)], capture_output=True, text=True, timeout=120)
    if result.returncode != 0:
        raise KustomizeError(f"kubectl kustomize {folder}: {result.stderr.strip()}")
    return [doc for doc in yaml.load_all(result.stdout, Loader=_Loader) if doc]


def render_overlay(folder: Path) -> list[dict]:
    """The objects of the kustomization in `folder`, rendered in Python (see the module's doc)."""
    kustomization = yaml.safe_load((folder / "kustomization.yaml").read_text(encoding="utf-8"))
    unknown = set(kustomization) - {"apiVersion", "kind", "resources", "patches"}
    if unknown:
        raise KustomizeError(f"{folder}/kustomization.yaml: fields this renderer does not handle: {sorted(unknown)}")
    objects: list[dict] = []
    for resource in kustomization.get("resources", []):
        path = (folder / resource).resolve()
        if path.is_dir():
            objects += render_overlay(path)
        else:
            objects += [doc for doc in yaml.load_all(path.read_text(encoding="utf-8"), Loader=_Loader) if doc]
    for patch in kustomization.get("patches", []):
        _apply(objects, patch, folder)
    return objects


def _matches(obj: dict, target: dict) -> bool:
    group, _, version = obj["apiVersion"].rpartition("/")
    return (obj["kind"] == target["kind"] and obj["metadata"]["name"] == target["name"]
            and group == target.get("group", "") and version == target["version"])


def _apply(objects: list[dict], patch: dict, folder: Path) -> None:
    hits = [obj for obj in objects if _matches(obj, patch["target"])]
    if len(hits) != 1:
        raise KustomizeError(f"{folder}: patch target {patch['target']} matches {len(hits)} objects")
    operations = yaml.safe_load(patch["patch"])
    if isinstance(operations, dict):
        if operations.get("$patch") != "delete":
            raise KustomizeError(f"{folder}: a strategic-merge patch other than `$patch: delete` is not handled")
        objects.remove(hits[0])
        return
    for op in operations:
        if op.get("op") != "replace":
            raise KustomizeError(f"{folder}: JSON patch op {op.get('op')!r} is not handled (only replace)")
        *parents, last = [part.replace("~1", "/").replace("~0", "~") for part in op["path"].split("/")[1:]]
        node = hits[0]
        try:
            for part in parents:
                node = node[int(part)] if isinstance(node, list) else node[part]
            if isinstance(node, list):
                node[int(last)] = op["value"]
            elif last in node:
                node[last] = op["value"]
            else:
                raise KeyError(last)
        except (KeyError, IndexError, ValueError, TypeError):
            raise KustomizeError(f"{folder}: replace of a missing path {op['path']} in {patch['target']}") from None
