"""The ha profile's Alertmanager cluster: one `alertmanager.yml` for the three peers, whose every
webhook goes to both notifiers, and each peer's gossip flags.

Dedup across the peers is Alertmanager's own: each peer waits its position in the cluster times
`--cluster.peer-timeout` before notifying and skips a notification another peer's gossiped notification
log already holds. Each webhook goes to both notifiers (one `webhook_configs` entry each, so one down
notifier fails only its own integration); both store into one PostgreSQL, where the notifier keeps one
incident per group and pages it once.
"""

from __future__ import annotations

from copy import deepcopy
from urllib.parse import urlsplit, urlunsplit

from vigil.stack.settings import StackSettings
from vigil.stack.config.ha import HaTopology

# Gossip timings for a loopback cluster: members know each other within a second and the notification
# log reaches every peer well inside the peer timeout (the defaults, for a data centre, are 200ms gossip,
# 1m push-pull, 15s peer timeout and 1m settle).
GOSSIP_FLAGS = {
    "--cluster.gossip-interval": "100ms",
    "--cluster.pushpull-interval": "2s",
    "--cluster.peer-timeout": "2s",
    "--cluster.settle-timeout": "5s",
    "--cluster.reconnect-interval": "2s",
}


def fan_out_webhooks(config: dict, notifier_bases: list[str]) -> dict:
    """`config` with each webhook (to replica 1's notifier) repeated for every notifier in `notifier_bases`."""
    doc = deepcopy(config)
    for receiver in doc["receivers"]:
        hooks = receiver.get("webhook_configs")
        if hooks:
            receiver["webhook_configs"] = [{**hook, "url": _rebase(hook["url"], base)}
                                           for hook in hooks for base in notifier_bases]
    return doc


def _rebase(url: str, base: str) -> str:
    """`url`'s path and query on `base`'s scheme, host and port."""
    parts, target = urlsplit(url), urlsplit(base)
    return urlunsplit((target.scheme, target.netloc, parts.path, parts.query, parts.fragment))


def notifier_bases(settings: StackSettings) -> list[str]:
    topology = HaTopology(settings)
    return [topology.url(port) for port in topology.notifier_ports()]


def cluster_flags(settings: StackSettings, peer: int) -> list[str]:
    """Alertmanager flags that make peer `peer` (1-based) gossip with the others on loopback."""
    topology = HaTopology(settings)
    gossip = topology.gossip_ports()
    own = topology.address(gossip[peer - 1])
    flags = [f"--cluster.listen-address={own}", f"--cluster.advertise-address={own}"]
    flags += [f"--cluster.peer={topology.address(port)}" for i, port in enumerate(gossip, start=1) if i != peer]
    return flags + [f"{flag}={value}" for flag, value in GOSSIP_FLAGS.items()]
