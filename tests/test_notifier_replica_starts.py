"""Two Prometheus replicas start the same alert at their own evaluation times: the notifier's incident
rules count a firing as known when the same alert (fingerprint) started within REPLICA_START_SKEW_S,
so a copy from another replica neither re-pages an incident nor records a second one after it resolved;
a firing that started long after is still a firing the on-call never heard of."""

from __future__ import annotations

from vigil.notifier.core.incidents import REPLICA_START_SKEW_S, IncidentState, KnownFirings, decide
from vigil.notifier.core.models import WebhookPayload
from test_notifier_support import alert, payload

REPLICA_1 = "2026-11-21T20:00:00.123Z"
REPLICA_2 = "2026-11-21T20:00:01.123Z"  # one evaluation later
MUCH_LATER = "2026-11-21T20:30:00.000Z"


def notification(status: str, starts: str) -> WebhookPayload:
    return WebhookPayload.model_validate(payload(alert(status=status, starts=starts)))


def known(starts: str) -> frozenset[str]:
    return frozenset(a.firing_key() for a in notification("firing", starts).alerts)


def test_a_firing_is_known_by_fingerprint_and_a_start_within_the_skew():
    key = next(iter(known(REPLICA_2)))
    assert key in KnownFirings(known(REPLICA_2))
    assert key in KnownFirings(known(REPLICA_1))
    assert key not in KnownFirings(known(MUCH_LATER))
    other = WebhookPayload.model_validate(payload(alert(fingerprint="fp-2", starts=REPLICA_1))).alerts[0].firing_key()
    assert other not in KnownFirings(known(REPLICA_1))
    assert REPLICA_START_SKEW_S < 30 * 60


def test_the_other_replicas_resolved_copy_after_the_resolution_is_attached_not_recorded():
    resolved = IncidentState(1, "resolved", known(REPLICA_1), resolved_at=100.0)
    assert decide(notification("resolved", REPLICA_2), resolved).action == "attach"
    assert decide(notification("resolved", MUCH_LATER), resolved).action == "record"


def test_the_other_replicas_firing_copy_does_not_page_the_incident_again():
    firing = IncidentState(1, "firing", known(REPLICA_1))
    decision = decide(notification("firing", REPLICA_2), firing)
    assert (decision.action, decision.page) == ("update", False)
    assert decide(notification("firing", MUCH_LATER), firing).page
