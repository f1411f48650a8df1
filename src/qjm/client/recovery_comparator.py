"""Choosing the source of a segment recovery among prepare_recovery answers.

Hadoop's SegmentRecoveryComparator: compare_responses is its ordering, and
SegmentRecoveryComparator the same ordering as a sort key.

Pure functions over plain records of the answers (RecoveryAnswer); no I/O, no wire
messages. Each copy of the segment has an epoch: for an in-progress copy, its "seen epoch"
max(last_writer_epoch, accepted_in_epoch) (HDFS's rule); for a finalized copy, the epoch
that decided it, which the node reports as accepted_in_epoch (docs/design.md §J.3). The
rules, best first:

1. a node that has no segment starting at the txid can never be the source;
2. the copy of the newest epoch wins: an honest decision is never contradicted by a later
   epoch, so a finalized copy an older epoch decided that a newer copy contradicts is a
   deposed writer's, and loses;
3. with equal epochs, a finalized copy beats an in-progress one (its writer or its
   recovery decided it); two finalized copies of different lengths break the protocol;
4. between in-progress copies of equal epochs, the one with more transactions wins.

HDFS ranks every finalized copy above every in-progress one, whoever decided it (§J.4).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TypeVar

from qjm.errors import QjmError

K = TypeVar("K")


class RecoveryInvariantError(QjmError):
    """The answers contradict an invariant of the protocol; recovery must not go on."""


@dataclass(frozen=True)
class Segment:
    """One node's copy of a segment: its first and last txid, and whether it is open."""

    start_txid: int
    end_txid: int
    in_progress: bool

    def __str__(self) -> str:
        kind = "in progress" if self.in_progress else "finalized"
        return f"segment {self.start_txid}-{self.end_txid} ({kind})"


@dataclass(frozen=True)
class RecoveryAnswer:
    """One node's prepare_recovery answer about one segment."""

    segment: Segment | None
    last_writer_epoch: int
    accepted_in_epoch: int | None = None
    last_committed_txid: int | None = None


def describe_response(resp: RecoveryAnswer) -> str:
    """A one-line summary of a prepare_recovery answer, for logs and errors."""
    parts = [str(resp.segment or "no segment"), f"last writer epoch {resp.last_writer_epoch}"]
    if resp.accepted_in_epoch is not None:
        parts.append(f"accepted in epoch {resp.accepted_in_epoch}")
    if resp.last_committed_txid is not None:
        parts.append(f"committed txid {resp.last_committed_txid}")
    return ", ".join(parts)


def seen_epoch(resp: RecoveryAnswer) -> int:
    """The newest epoch that wrote or decided this node's copy of the segment (rule 2).

    A finalized copy's is the epoch that decided it; a node that recorded none (storage
    from before decisions were recorded) is taken at its last writer epoch.
    """
    seg = resp.segment
    if seg is not None and not seg.in_progress and resp.accepted_in_epoch is not None:
        return resp.accepted_in_epoch
    return max(resp.accepted_in_epoch or 0, resp.last_writer_epoch)


def compare_responses(a: RecoveryAnswer, b: RecoveryAnswer) -> int:
    """-1, 0 or 1 as a is a worse, equally good or better recovery source than b."""
    sa, sb = a.segment, b.segment
    if sa is None or sb is None:
        return (sa is not None) - (sb is not None)
    if sa.start_txid != sb.start_txid:
        raise ValueError(
            f"can only compare answers about one segment, got segments starting at "
            f"{sa.start_txid} and {sb.start_txid}"
        )
    ea, eb = seen_epoch(a), seen_epoch(b)
    a_final, b_final = not sa.in_progress, not sb.in_progress
    if ea == eb and a_final and b_final and sa.end_txid != sb.end_txid:
        raise RecoveryInvariantError(
            f"two finalized copies of segment {sa.start_txid} decided in epoch {ea} end at "
            f"different txids ({sa.end_txid} and {sb.end_txid})"
        )
    ka = (ea, a_final, sa.end_txid)
    kb = (eb, b_final, sb.end_txid)
    return (ka > kb) - (ka < kb)


# Hadoop's SegmentRecoveryComparator, under its name: a sort key that orders answers from
# the worst recovery source to the best (compare_responses).
SegmentRecoveryComparator = functools.cmp_to_key(compare_responses)


def choose_recovery_source(
    responses: Iterable[tuple[K, RecoveryAnswer]],
) -> tuple[K, RecoveryAnswer] | None:
    """The best answer (the first of equally good ones), or None when no node has the segment.

    Every pair of finalized answers of one epoch is checked for equal length, not only the
    winner's.
    """
    best: tuple[K, RecoveryAnswer] | None = None
    finalized_ends: dict[int, int] = {}
    for key, resp in responses:
        seg = resp.segment
        if seg is not None and not seg.in_progress:
            epoch = seen_epoch(resp)
            end = finalized_ends.setdefault(epoch, seg.end_txid)
            if end != seg.end_txid:
                raise RecoveryInvariantError(
                    f"two finalized copies of segment {seg.start_txid} decided in epoch "
                    f"{epoch} end at different txids ({end} and {seg.end_txid})"
                )
        if best is None or compare_responses(resp, best[1]) > 0:
            best = (key, resp)
    if best is None or best[1].segment is None:
        return None
    return best
