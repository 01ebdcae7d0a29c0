"""Route stage: which recipient channels a page goes to, from the on-call config."""

from __future__ import annotations

from dataclasses import dataclass

from vigil.oncall.model import OncallConfig, channel_wants


@dataclass(frozen=True)
class PageRoute:
    """One delivery to make: the target and the position of the channel in its `channels` list."""

    target: str
    channel_index: int
    channel_type: str


def route_page(config: OncallConfig, labels: dict[str, str]) -> list[PageRoute]:
    """The channels to page for an incident with `labels` (empty when no route and no default)."""
    target_key = config.target_for(labels)
    if target_key is None:
        return []
    severity = labels.get("severity")
    target = config.targets[target_key]
    return [
        PageRoute(target_key, index, channel.type)
        for index, channel in enumerate(target.channels)
        if channel_wants(channel, severity)
    ]
