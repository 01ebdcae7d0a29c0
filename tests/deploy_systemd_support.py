"""A unit's ExecStart as the argv systemd would run (tests of deploy/systemd)."""

from __future__ import annotations

from vigil.deploy.systemd import UNITS, render_units


def exec_argv(unit_name: str, environment: dict[str, str] | None = None, credentials: str | None = None,
              state: str = "/var/lib") -> list[str]:
    """The unit's ExecStart with systemd's expansions: ${VAR} and $VAR from the unit's defaults updated
    with `environment` (as /etc/vigil/NAME.env would), $VAR split into words, %d the credentials
    directory, %S the state root."""
    unit = next(u for u in UNITS if u.name == unit_name)
    env = {**unit.environment, **(environment or {})}
    text = render_units()[unit.file_name]
    line = next(line for line in text.splitlines() if line.startswith("ExecStart="))
    words = []
    for word in line.removeprefix("ExecStart=").split(" "):
        word = word.replace("%d", credentials or f"/run/credentials/{unit.file_name}").replace("%S", state)
        if word.startswith("${"):
            words.append(env[word[2:-1]])
        elif word.startswith("$"):
            words += env[word[1:]].split()
        else:
            words.append(word)
    return words


def unit_setting(unit_name: str, key: str) -> list[str]:
    """The values of `key=` lines in the generated unit."""
    text = render_units()[f"{unit_name}.service"]
    return [line.split("=", 1)[1] for line in text.splitlines() if line.startswith(f"{key}=")]
