"""Routing: which target an alert group pages, in which steps, and through which of its channels.

Routes are tried in order and the first whose `match` equals the labels wins; `default` catches the
rest (none: nobody is paged). A route pages a list of **steps**: today exactly one, its `notify`
target at once. Escalation tiers (primary → senior → manager, each after a wait) plug in here:
`steps_for` will return one step per tier with its `after_s`, and the notifier's route stage already
enqueues every step's pages due `after_s` seconds later (its mute stage drops those whose incident
resolved meanwhile).
"""

from __future__ import annotations

from dataclasses import dataclass

from vigil.oncall.model import Channel, OncallConfig, Route


@dataclass(frozen=True)
class Step:
    """One step of a route: page `target` once `after_s` seconds have passed since the incident paged."""

    target: str
    after_s: float = 0.0


@dataclass(frozen=True)
class PageRoute:
    """One delivery to make: the target, the position of the channel in its `channels`, and when."""

    target: str
    channel_index: int
    channel_type: str
    after_s: float = 0.0


def route_matches(route: Route, labels: dict[str, str]) -> bool:
    """Whether `labels` carry every `match` entry of `route` with the same value."""
    return all(labels.get(key) == value for key, value in route.match.items())


def target_for(config: OncallConfig, labels: dict[str, str]) -> str | None:
    """The target key of the first route matching `labels`, else `default` (None: nobody)."""
    for route in config.routes:
        if route_matches(route, labels):
            return route.notify
    return config.default


def steps_for(config: OncallConfig, labels: dict[str, str]) -> list[Step]:
    """The steps that page an incident with `labels`: today one, the route's target, at once."""
    target = target_for(config, labels)
    return [] if target is None else [Step(target)]


def channel_wants(channel: Channel, severity: str | None) -> bool:
    """Whether `channel` should carry a page of `severity` (no filter: every severity)."""
    return channel.severities is None or severity in channel.severities


def route_page(config: OncallConfig, labels: dict[str, str]) -> list[PageRoute]:
    """Every channel to page for an incident with `labels`, step by step (empty: nobody)."""
    severity = labels.get("severity")
    return [
        PageRoute(step.target, index, channel.type, step.after_s)
        for step in steps_for(config, labels)
        for index, channel in enumerate(config.targets[step.target].channels)
        if channel_wants(channel, severity)
    ]


def channel_of(config: OncallConfig, target: str, channel_index: int, channel_type: str) -> Channel | None:
    """The channel a page was routed to, if the config still has it there (it may have been edited)."""
    known = config.targets.get(target)
    if known is None or channel_index >= len(known.channels):
        return None
    channel = known.channels[channel_index]
    return channel if channel.type == channel_type else None
