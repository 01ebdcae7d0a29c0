"""Coverage gaps: the times when a tier of an escalation policy has nobody on call.

A tier is covered wherever one of its entries has someone: a `{person: P}` entry covers all time, a
`{schedule: S}` entry covers the final shifts of S. A gap is a stretch of the asked range that no
entry covers; `vigil oncall check` reports each one (a page in that stretch would find nobody).
"""

from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace

from pydantic import ValidationError

from vigil.oncall.plan import tier_people
from vigil.oncall.policies import Tier
from vigil.oncall.schedule_model import Schedule, zone_named
from vigil.oncall.schedules import shifts


@dataclass(frozen=True)
class Gap:
    """Tier `tier_index` (0-based, named `tier_name`) of `policy` has nobody from `start` to `end`."""

    policy: str
    tier_index: int
    tier_name: str
    start: float
    end: float


def tier_name(tier, index: int) -> str:
    """A tier's name, else `tier N` (1-based)."""
    return getattr(tier, "name", None) or f"tier {index + 1}"


def gaps(config, start: float, end: float) -> list[Gap]:
    """Every gap of every tier of every policy between `start` and `end` (UNIX seconds), in file order."""
    found: list[Gap] = []
    for policy_name, policy in (getattr(config, "policies", None) or {}).items():
        for index, tier in enumerate(policy.tiers):
            if tier is None:  # a tier that did not validate (`salvage`): its mistake is reported already
                continue
            covered = _covered(config, tier, start, end)
            found += [Gap(policy_name, index, tier_name(tier, index), begin, finish)
                      for begin, finish in uncovered(covered, start, end)]
    return found


def _covered(config, tier, start: float, end: float) -> list[tuple[float, float]]:
    spans: list[tuple[float, float]] = []
    for entry in tier.notify:
        if entry.person is not None:
            return [(start, end)]
        spans += [(shift.start, shift.end) for shift in shifts(config, entry.schedule, start, end)]
    return sorted(spans)


def uncovered(covered: list[tuple[float, float]], start: float, end: float) -> list[tuple[float, float]]:
    """The stretches of [start, end] that no (start, end) span of `covered` (sorted by start) covers."""
    holes, cursor = [], start
    for begin, finish in covered:
        if begin > cursor:
            holes.append((cursor, begin))
        cursor = max(cursor, finish)
    if cursor < end:
        holes.append((cursor, end))
    return holes


@dataclass(frozen=True)
class TierCover:
    """Who tier `index` (0-based, named `name`) of a policy pages at one moment ([]: nobody)."""

    index: int
    name: str
    people: tuple[str, ...]


@dataclass(frozen=True)
class TeamCover:
    """A team (None: a policy no team names), its policy and who each tier pages."""

    team: str | None
    policy: str | None
    tiers: tuple[TierCover, ...]


def who(config, at: float, team: str | None = None) -> list[TeamCover]:
    """Who is on call at `at` for each tier of each team's policy (only `team` when given; with no
    teams in the file, each policy). KeyError naming the team when `team` is unknown."""
    teams = getattr(config, "teams", None) or {}
    policies = getattr(config, "policies", None) or {}
    if team is not None and team not in teams:
        known = ", ".join(sorted(teams)) or "none defined"
        raise KeyError(f"unknown team {team!r} (known: {known})")
    if teams:
        wanted = [(name, teams[name].policy) for name in ([team] if team else teams)]
    else:
        wanted = [(None, name) for name in policies]
    found = []
    for team_name, policy in wanted:
        tiers = policies[policy].tiers if policy in policies else ()
        found.append(TeamCover(team_name, policy, tuple(
            TierCover(index, tier_name(tier, index), tuple(tier_people(config, policy, index, at)))
            for index, tier in enumerate(tiers))))
    return found


def salvage(data: object) -> SimpleNamespace:
    """What `gaps` needs from an on-call file that does not validate as a whole: its zone, the
    schedules that validate on their own, and each policy's tiers that validate and name only those
    schedules (the others None, so tiers keep their numbers). `vigil oncall check` thus reports the
    gaps of a file together with its mistakes."""
    data = data if isinstance(data, dict) else {}
    zone = data.get("timezone")
    try:
        zone = zone_named(zone).key if isinstance(zone, str) else None
    except ValueError:
        zone = None
    schedules = {name: found for name, found in _valid_items(data.get("schedules"), Schedule) if found}
    policies = {}
    section = data.get("policies")
    for name, policy in (section.items() if isinstance(section, dict) else ()):
        tiers = policy.get("tiers") if isinstance(policy, dict) else None
        valid = [tier if tier and all(entry.schedule in (None, *schedules) for entry in tier.notify) else None
                 for _, tier in _valid_items(dict(enumerate(tiers)) if isinstance(tiers, list) else {}, Tier)]
        policies[name] = SimpleNamespace(tiers=tuple(valid))
    return SimpleNamespace(timezone=zone, schedules=schedules, policies=policies, people={}, teams={})


def _valid_items(section: object, model) -> list[tuple]:
    """(key, model or None when that item does not validate) for each item of a mapping."""
    found = []
    for key, value in (section.items() if isinstance(section, dict) else ()):
        try:
            found.append((key, model.model_validate(value)))
        except ValidationError:
            found.append((key, None))
    return found


def team_zone(config, team: str | None):
    """The zone of `team` (its own `timezone`, else the file's, else UTC); the file's for None."""
    known = (getattr(config, "teams", None) or {}).get(team) if team else None
    return zone_named(getattr(known, "timezone", None) or getattr(config, "timezone", None) or "UTC")


def team_schedules(config, team: str | None) -> list[str]:
    """The schedules `team`'s policy pages through, in tier order (every schedule for None)."""
    if team is None:
        return list(getattr(config, "schedules", None) or {})
    policy = (getattr(config, "policies", None) or {}).get(config.teams[team].policy or "")
    entries = [entry for tier in (policy.tiers if policy else ()) for entry in tier.notify]
    return list(dict.fromkeys(entry.schedule for entry in entries if entry.schedule))
