"""Sharded scraping: N Prometheus instances split one fleet's targets with `hashmod` relabelling.

Every shard reads the same scrape config and keeps only the targets whose address hashes to its own
number (`__tmp_hash` = hash(`__address__`) mod N, kept when it equals the shard): a target is
scraped by exactly one shard, and adding a node never needs a config change. Each shard gets a
`shard` external label so its alerts and remote-written series say where they came from, and the
shards meet again in VictoriaMetrics (remote write), the global query view. The jobs that scrape the
stack's own services (one target each) stay unsharded on shard 0 only.
"""

from __future__ import annotations

import hashlib
from copy import deepcopy

HASH_LABEL = "__tmp_hash"
SHARD_LABEL = "shard"


def shard_relabel(shards: int, shard: int) -> list[dict]:
    """The relabel rules that keep shard `shard`'s (0-based) part of a job's targets."""
    if shards < 1 or not 0 <= shard < shards:
        raise ValueError(f"shard must be 0 … {shards - 1} of {shards} shards, not {shard}")
    return [
        {"source_labels": ["__address__"], "modulus": shards, "target_label": HASH_LABEL, "action": "hashmod"},
        {"source_labels": [HASH_LABEL], "regex": str(shard), "action": "keep"},
    ]


def sharded_config(config: dict, shards: int, shard: int, sharded_jobs: set[str]) -> dict:
    """`config` (a whole `prometheus.yml`) as shard `shard` of `shards` runs it.

    Jobs in `sharded_jobs` are split by target; the others are kept on shard 0 and dropped elsewhere.
    """
    doc = deepcopy(config)
    rules = shard_relabel(shards, shard)
    kept = []
    for job in doc["scrape_configs"]:
        if job["job_name"] in sharded_jobs:
            job["relabel_configs"] = [*job.get("relabel_configs", []), *deepcopy(rules)]
            kept.append(job)
        elif shard == 0:
            kept.append(job)
    doc["scrape_configs"] = kept
    doc["global"].setdefault("external_labels", {})[SHARD_LABEL] = str(shard)
    return doc


def shard_of(address: str, shards: int) -> int:
    """Which shard scrapes `address`: Prometheus' hashmod (the last 8 bytes of the MD5 of the value, big
    endian, modulo N), for docs and tests that predict the split."""
    return int.from_bytes(hashlib.md5(address.encode()).digest()[8:], "big") % shards
