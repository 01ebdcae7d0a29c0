"""The sandbox every vigil unit starts from, and the ways a unit may relax it (each with its reason).

`BASELINE` is the strictest set that a Python service answering HTTP needs: no privileges, a read-only
system, its own /tmp and /dev, only IP and Unix sockets, the syscalls of `@system-service`. A unit that
needs more names each directive it changes in a `Relax` with the reason, which is written above the
line in the unit file and in docs/deploy.md's hardening table.
"""

from __future__ import annotations

from dataclasses import dataclass

from .unit_file import Line

# directive -> its values (a directive with two values, like SystemCallFilter's allow and deny lists,
# is written as two lines)
BASELINE: dict[str, tuple[str, ...]] = {
    "DynamicUser": ("yes",),
    "NoNewPrivileges": ("yes",),
    "CapabilityBoundingSet": ("",),
    "AmbientCapabilities": ("",),
    "ProtectSystem": ("strict",),
    "ProtectHome": ("yes",),
    "PrivateTmp": ("yes",),
    "PrivateDevices": ("yes",),
    "DevicePolicy": ("closed",),
    "PrivateUsers": ("yes",),
    "PrivateIPC": ("yes",),
    "PrivateMounts": ("yes",),
    "ProtectProc": ("invisible",),
    "ProtectKernelTunables": ("yes",),
    "ProtectKernelModules": ("yes",),
    "ProtectKernelLogs": ("yes",),
    "ProtectControlGroups": ("yes",),
    "ProtectClock": ("yes",),
    "ProtectHostname": ("yes",),
    "RestrictNamespaces": ("yes",),
    "RestrictRealtime": ("yes",),
    "RestrictSUIDSGID": ("yes",),
    "LockPersonality": ("yes",),
    "MemoryDenyWriteExecute": ("yes",),
    "RemoveIPC": ("yes",),
    "RestrictAddressFamilies": ("AF_INET AF_INET6 AF_UNIX",),
    "SystemCallArchitectures": ("native",),
    "SystemCallFilter": ("@system-service", "~@privileged @resources"),
    # a call outside the filter fails with EPERM (the library sees an error) instead of killing the process
    "SystemCallErrorNumber": ("EPERM",),
    "UMask": ("0077",),
}


@dataclass(frozen=True)
class Relax:
    """A unit's change to one baseline directive: new values (none: the directive is left out) and why."""

    directive: str
    values: tuple[str, ...]
    why: str

    def __post_init__(self):
        if self.directive not in BASELINE:
            raise ValueError(f"{self.directive}= is not a baseline directive")
        if not self.why:
            raise ValueError(f"{self.directive}=: say why the baseline is relaxed")


def hardening_lines(relaxations: list[Relax]) -> list[Line]:
    """The baseline with a unit's relaxations applied, in the baseline's order; relaxed lines carry their
    reason (a directive left out is written as a comment saying why)."""
    by_directive = {relax.directive: relax for relax in relaxations}
    if len(by_directive) != len(relaxations):
        raise ValueError("a directive is relaxed twice")
    lines: list[Line] = []
    for directive, values in BASELINE.items():
        relax = by_directive.get(directive)
        if relax is None:
            lines += [Line(directive, value) for value in values]
        elif not relax.values:
            lines.append(Line(f"#{directive}", "", why=relax.why))
        else:
            lines += [Line(directive, value, why=relax.why if i == 0 else "") for i, value in enumerate(relax.values)]
    return lines
