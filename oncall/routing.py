"""Routing: which route an alert group takes, and the first version's target paging.

Routes are tried in order and the first whose `match` equals the labels (and whose `match_re`
patterns fully match them) wins. `matching_route` is shared with `plan.py`, which turns the route
into a policy and a priority. The rest is the first version's API, which the notifier uses until it
pages through `plan.py`: a route pages a list of **steps**, exactly one, its `notify` target at
once, and `default` catches the rest (none: nobody is paged). A matching route that names a
`policy` instead pages nobody here: only the planning API knows policies.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from vigil.oncall.legacy import channel_wants
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
    """Whether `labels` carry every `match` entry of `route` with the same value, and every
    `match_re` label fully matches its pattern (a missing label is the empty string)."""
    return (all(labels.get(key) == value for key, value in route.match.items())
            and all(re.fullmatch(pattern, labels.get(key, "")) for key, pattern in route.match_re.items()))


def matching_route(config: OncallConfig, labels: dict[str, str]) -> Route | None:
    """The first route matching `labels`, if any."""
    return next((route for route in config.routes if route_matches(route, labels)), None)


def target_for(config: OncallConfig, labels: dict[str, str]) -> str | None:
    """The target key of the first route matching `labels`, else `default` (None: nobody).

    A matching route that names a policy, or one whose `notify` is a person rather than a target,
    gives None: the first version's paging cannot reach them (the planning API does)."""
    route = matching_route(config, labels)
    name = config.default if route is None else route.notify
    return name if name in config.targets else None


def steps_for(config: OncallConfig, labels: dict[str, str]) -> list[Step]:
    """The steps that page an incident with `labels`: today one, the route's target, at once."""
    target = target_for(config, labels)
    return [] if target is None else [Step(target)]


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
