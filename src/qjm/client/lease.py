"""The writer's lease on the journal (design §N.1): the rules as pure functions, and the clock.

A writer holds the journal for `lease_s` from the instant it sent a call at its epoch that
a majority of JournalNodes then accepted: until then no newer writer can have been promised
by a majority without that majority first accepting the call. A writer that just won its
epoch waits until every older writer's lease has run out before it answers anyone.
"""

from __future__ import annotations

import time
from collections.abc import Callable

__all__ = [
    "CLOCK_RATE_MARGIN",
    "RENEW_FRACTION",
    "Clock",
    "lease_clock",
    "lease_left",
    "older_leases_end",
    "renewal_due",
]

Clock = Callable[[], float]

# How far any two hosts' clocks may disagree on the length of one interval: 2% (NTP slews a
# clock by at most 0.05%; the rest covers odd virtual clocks).
CLOCK_RATE_MARGIN = 0.02
# A writer renews once a quarter of its lease has passed without a renewal, so a quorum
# that answers within the other three quarters keeps it without a gap.
RENEW_FRACTION = 0.25
# CLOCK_BOOTTIME where the system has it (Linux): CLOCK_MONOTONIC stops while the host is
# suspended, so a host woken after a long sleep would think its lease still fresh.
_CLOCK = getattr(time, "CLOCK_BOOTTIME", time.CLOCK_MONOTONIC)


def lease_clock() -> float:
    """Seconds on a clock that never jumps and keeps counting while the host is suspended."""
    return time.clock_gettime(_CLOCK)


def lease_left(renewed_at: float | None, now: float, lease_s: float) -> float:
    """Seconds the lease still runs (0 or less: lapsed; never renewed: lapsed)."""
    if renewed_at is None:
        return -lease_s
    return renewed_at + lease_s - now


def renewal_due(renewed_at: float | None, now: float, lease_s: float) -> bool:
    """True when the writer should send a renewing call now (nothing renewed it lately)."""
    return renewed_at is None or now - renewed_at >= lease_s * RENEW_FRACTION


def older_leases_end(
    won_at: float, older_idle_s: float, lease_s: float, margin: float = CLOCK_RATE_MARGIN
) -> float:
    """The instant (on the new writer's clock) after which no older writer holds a lease.

    won_at: when a majority's answers to the new writer's newEpoch had all arrived.
    older_idle_s: the least time any of those answers reports since its node last accepted
    a call of an older writer (or started; 0 when a node does not say). An older writer's
    last renewing call reached such a node before it promised the new epoch (a majority
    accepted the call, and every majority meets the majority that promised), so it was sent
    at least older_idle_s before won_at; its lease, measured on a clock that may run slow
    by margin, ends at most lease_s * (1 + margin) later, and the new writer's clock may
    itself run fast by margin.
    """
    if older_idle_s < 0:
        raise ValueError(f"an idle time cannot be negative, got {older_idle_s}")
    wait = lease_s * (1 + margin) / (1 - margin) - older_idle_s
    return won_at + max(0.0, wait)
