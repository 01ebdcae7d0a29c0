"""Group firings that share a cause by topology (node -> GPUs, job) and time.

Two firings are related when they are close in time (one starts within `window_s` of the other's
start, or while the other is firing) and
- one carries `node` but no `gpu` and the other the same `node` with a `gpu` (node is the parent), or
- both carry the same `node` and `gpu`, or
- both carry the same `job_id`.
Groups are the connected components of that relation.
"""

from __future__ import annotations

from dataclasses import dataclass

from vigil.aiops.correlate.alerts import Firing


@dataclass(frozen=True)
class AlertGroup:
    """Firings that share a cause; `parents` are the node-level firings with GPU-level firings below them."""

    firings: tuple[Firing, ...]
    parents: tuple[Firing, ...]

    @property
    def start(self) -> float:
        return min(f.start for f in self.firings)


def close_in_time(a: Firing, b: Firing, window_s: float) -> bool:
    if abs(a.start - b.start) <= window_s:
        return True
    return a.active_at(b.start) or b.active_at(a.start)


def _keys(firing: Firing) -> list[tuple]:
    """Buckets a firing belongs to; only firings sharing a bucket can be related."""
    node, gpu, job = firing.label("node"), firing.label("gpu"), firing.label("job_id")
    keys = []
    if node is not None:
        keys.append(("node", node))
    if job is not None:
        keys.append(("job", job))
    return keys


def related(a: Firing, b: Firing) -> bool:
    """Topology only (time is checked separately)."""
    job_a, job_b = a.label("job_id"), b.label("job_id")
    if job_a is not None and job_a == job_b:
        return True
    node_a, node_b = a.label("node"), b.label("node")
    if node_a is None or node_a != node_b:
        return False
    gpu_a, gpu_b = a.label("gpu"), b.label("gpu")
    return (gpu_a is None) != (gpu_b is None) or (gpu_a is not None and gpu_a == gpu_b)


def group_firings(firings: list[Firing], window_s: float = 300.0, min_size: int = 2) -> list[AlertGroup]:
    """Connected groups of related firings with at least `min_size` members, oldest first."""
    parent = list(range(len(firings)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    buckets: dict[tuple, list[int]] = {}
    for index, firing in enumerate(firings):
        for key in _keys(firing):
            buckets.setdefault(key, []).append(index)
    for members in buckets.values():
        for x, i in enumerate(members):
            for j in members[x + 1 :]:
                a, b = firings[i], firings[j]
                if related(a, b) and close_in_time(a, b, window_s):
                    parent[find(i)] = find(j)
    components: dict[int, list[Firing]] = {}
    for index, firing in enumerate(firings):
        components.setdefault(find(index), []).append(firing)
    groups = [
        AlertGroup(
            firings=tuple(sorted(members, key=lambda f: (f.start, f.labels))),
            parents=_parents(members),
        )
        for members in components.values()
        if len(members) >= min_size
    ]
    return sorted(groups, key=lambda g: (g.start, g.firings[0].labels))


def _parents(members: list[Firing]) -> tuple[Firing, ...]:
    """Node-level firings (node, no gpu) with at least one GPU-level firing of the same node below them."""
    gpu_nodes = {f.label("node") for f in members if f.label("gpu") is not None}
    return tuple(f for f in members if f.label("gpu") is None and f.label("node") in gpu_nodes)
