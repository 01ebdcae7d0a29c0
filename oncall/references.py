"""References between the sections of the on-call file: every name used must be defined.

People named by schedules, teams and policy tiers; schedules named by tiers; policies named by teams,
routes and `default_policy`; targets named by first-version routes and `default`; contacts named by a
person's notification rules. The check walks the plain data (before or after pydantic), skipping what
is malformed (pydantic reports that), so the loader can report every unknown name at the line of the
reference, together with every other mistake of the file.
"""

from __future__ import annotations

from typing import Any, Iterator

Problem = tuple[tuple, str]  # (location as a key path, "dotted.path: message")


def reference_problems(data: Any) -> list[Problem]:
    """Every reference in the on-call `data` that names something the file does not define."""
    if not isinstance(data, dict):
        return []
    people = _keys(data.get("people"))
    targets = _keys(data.get("targets"))
    names = {"person": people | targets, "schedule": _keys(data.get("schedules")),
             "policy": _keys(data.get("policies")), "target": people | targets}
    found = [_problem(loc, f"unknown {kind} {name!r}") for loc, kind, name in _references(data)
             if name not in names[kind]]
    found += [_problem(("people", name), f"{name!r} is also defined under `targets:`")
              for name in sorted(people & targets)]
    found += contact_problems(data)
    if isinstance(data.get("default"), str) and isinstance(data.get("default_policy"), str):
        found.append(_problem(("default_policy",), "set `default_policy` or (first version) `default`, not both"))
    return found


def _problem(loc: tuple, message: str) -> Problem:
    return loc, f"{'.'.join(str(part) for part in loc)}: {message}"


def _keys(section: Any) -> set[str]:
    return set(section) if isinstance(section, dict) else set()


def _items(section: Any) -> Iterator[tuple[Any, Any]]:
    """(key, value) of a mapping or (index, item) of a list; nothing for anything else."""
    if isinstance(section, dict):
        yield from section.items()
    elif isinstance(section, (list, tuple)):
        yield from enumerate(section)


def _name(holder: Any, key: str) -> str | None:
    value = holder.get(key) if isinstance(holder, dict) else None
    return value if isinstance(value, str) else None


def _references(data: dict) -> Iterator[tuple[tuple, str, str]]:
    """(location, kind, name) of every name the file uses to point at another section."""
    for index, route in _items(data.get("routes")):
        for key, kind in (("notify", "target"), ("policy", "policy")):
            if (name := _name(route, key)) is not None:
                yield ("routes", index, key), kind, name
    if (name := _name(data, "default")) is not None:
        yield ("default",), "target", name
    if (name := _name(data, "default_policy")) is not None:
        yield ("default_policy",), "policy", name
    for team_key, team in _items(data.get("teams")):
        if (name := _name(team, "policy")) is not None:
            yield ("teams", team_key, "policy"), "policy", name
        for index, member in _items(team.get("members") if isinstance(team, dict) else None):
            if isinstance(member, str):
                yield ("teams", team_key, "members", index), "person", member
    yield from _schedule_references(data.get("schedules"))
    yield from _policy_references(data.get("policies"))


def _schedule_references(schedules: Any) -> Iterator[tuple[tuple, str, str]]:
    for key, schedule in _items(schedules):
        if not isinstance(schedule, dict):
            continue
        for layer_index, layer in _items(schedule.get("layers")):
            for index, person in _items(layer.get("people") if isinstance(layer, dict) else None):
                if isinstance(person, str):
                    yield ("schedules", key, "layers", layer_index, "people", index), "person", person
        for index, override in _items(schedule.get("overrides")):
            if (name := _name(override, "person")) is not None:
                yield ("schedules", key, "overrides", index, "person"), "person", name


def _policy_references(policies: Any) -> Iterator[tuple[tuple, str, str]]:
    for key, policy in _items(policies):
        for tier_index, tier in _items(policy.get("tiers") if isinstance(policy, dict) else None):
            for index, entry in _items(tier.get("notify") if isinstance(tier, dict) else None):
                for kind in ("schedule", "person"):
                    if (name := _name(entry, kind)) is not None:
                        yield ("policies", key, "tiers", tier_index, "notify", index, kind), kind, name


def contact_problems(data: Any) -> list[Problem]:
    """Notification-rule steps naming a contact their person does not have."""
    found = []
    for key, person in _items(data.get("people") if isinstance(data, dict) else None):
        if not isinstance(person, dict):
            continue
        contacts = _keys(person.get("contacts"))
        for rule_index, rule in _items(person.get("notify")):
            for step_index, step in _items(rule.get("steps") if isinstance(rule, dict) else None):
                name = _name(step, "contact")
                if name is not None and name not in contacts:
                    loc = ("people", key, "notify", rule_index, "steps", step_index, "contact")
                    found.append(_problem(loc, f"unknown contact {name!r} (the contacts of {key!r}: "
                                               f"{', '.join(sorted(contacts)) or 'none'})"))
    return found
