"""The first version of the file seen through the second: targets as people, `notify:` as policies.

A legacy target is a person whose contacts are its channels, named `channel-0`, `channel-1`… with
the channel's `type` (`inbox` or `apprise`) as kind; it is paged the first version's way: every
channel whose `severities` admit the alert's severity, all at once. A route `notify: X` (and
`default: X`) is an implicit one-tier policy named `target:X` that pages X once, with no escalation
wait and no repeat.
"""

from __future__ import annotations

from vigil.oncall.contacts import Contact
from vigil.oncall.model import AppriseChannel, Channel, OncallConfig, Target

LEGACY_POLICY_PREFIX = "target:"


def legacy_policy_name(target: str) -> str:
    """The name of the implicit policy that pages `target` (what `route_incident` returns for it)."""
    return LEGACY_POLICY_PREFIX + target


def legacy_policy_target(config: OncallConfig, policy: str) -> str | None:
    """The target (or person) paged by the implicit policy `policy`; None if it is not one."""
    if policy in config.policies or not policy.startswith(LEGACY_POLICY_PREFIX):
        return None
    name = policy.removeprefix(LEGACY_POLICY_PREFIX)
    return name if name in config.targets or name in config.people else None


def contact_name(index: int) -> str:
    """The contact name a target's channel `index` has when seen as a person's contact."""
    return f"channel-{index}"


def channel_contact(channel: Channel) -> Contact:
    """A target's channel as a contact (kind `inbox` or `apprise`)."""
    if isinstance(channel, AppriseChannel):
        return Contact.legacy(url=channel.url, inbox=False, kind="apprise", max_per_minute=channel.max_per_minute)
    return Contact.legacy(url=None, inbox=True, kind="inbox", max_per_minute=None)


def channel_wants(channel: Channel, severity: str | None) -> bool:
    """Whether `channel` should carry a page of `severity` (no filter: every severity)."""
    return channel.severities is None or severity in channel.severities


def wanted_channels(target: Target, severity: str | None) -> list[int]:
    """Positions of the channels of `target` that carry a page of `severity`."""
    return [index for index, channel in enumerate(target.channels) if channel_wants(channel, severity)]
