"""Choosing the source of a segment recovery among prepare_recovery answers (design 2.9).

Pure functions over plain records of the answers (RecoveryAnswer); no I/O, no wire
messages. The rules, best first:

1. a node that has no segment starting at the txid can never be the source;
2. a finalized segment beats any in-progress one (a previous recovery was committed);
   two finalized segments of different lengths break the protocol's invariant;
3. between in-progress segments, the higher "seen epoch" wins, where the seen epoch is
   max(last_writer_epoch, accepted_in_epoch) (design 2.10.6 and 2.10.7);
4. with equal seen epochs, the segment with more transactions wins (design 2.10.1).

A finalized copy that an in-progress copy of a newer seen epoch contradicts is refused
(see _check_finalized_against_newer).
"""

from __future__ import annotations

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
    """The newest epoch that wrote or decided this node's copy of the segment (rule 3)."""
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
    a_final, b_final = not sa.in_progress, not sb.in_progress
    if a_final != b_final:
        return 1 if a_final else -1
    if a_final:
        if sa.end_txid != sb.end_txid:
            raise RecoveryInvariantError(
                f"two finalized copies of segment {sa.start_txid} end at different txids "
                f"({sa.end_txid} and {sb.end_txid})"
            )
        return 0
    ka = (seen_epoch(a), sa.end_txid)
    kb = (seen_epoch(b), sb.end_txid)
    return (ka > kb) - (ka < kb)


def choose_recovery_source(
    responses: Iterable[tuple[K, RecoveryAnswer]],
) -> tuple[K, RecoveryAnswer] | None:
    """The best answer (the first of equally good ones), or None when no node has the segment.

    Every pair of finalized answers is checked for equal length, not only the winner's.
    """
    best: tuple[K, RecoveryAnswer] | None = None
    finalized_end: int | None = None
    answers: list[RecoveryAnswer] = []
    for key, resp in responses:
        answers.append(resp)
        if resp.segment is not None and not resp.segment.in_progress:
            end = resp.segment.end_txid
            if finalized_end is not None and end != finalized_end:
                raise RecoveryInvariantError(
                    f"two finalized copies of segment {resp.segment.start_txid} end at "
                    f"different txids ({finalized_end} and {end})"
                )
            finalized_end = end
        if best is None or compare_responses(resp, best[1]) > 0:
            best = (key, resp)
    if best is None or best[1].segment is None:
        return None
    _check_finalized_against_newer(answers)
    return best


def _check_finalized_against_newer(answers: list[RecoveryAnswer]) -> None:
    """Refuse a finalized copy contradicted by a newer epoch's in-progress copy.

    A writer finalizes only at the txid a majority acknowledged, and a later recovery
    never ends below an acknowledged txid nor above what that majority held; so in an
    honest run, an in-progress copy written or accepted in a newer epoch than the one
    that decided the finalized copy ends where the finalized copy ends. A different end
    is evidence of an unacknowledged finalize (issue 8, A2): rule 2 would pick it and
    overwrite what the newer epoch acknowledged. HDFS has no such check; we stop instead
    of losing edits.

    The finalized copy's epoch is its seen epoch: the node's last writer epoch (a writer
    finalizes its own segment) or, for a segment a recovery finalized, the epoch of that
    recovery, which the node reports as accepted_in_epoch. Without the latter, a value
    accepted by a minority in a failed recovery would look newer than the value a later
    recovery chose and finalized, which is an honest state (Paxos: a later prepare quorum
    that saw no accepted value may choose another).
    """
    finalized = [a for a in answers if a.segment is not None and not a.segment.in_progress]
    for f in finalized:
        assert f.segment is not None
        for a in answers:
            if a.segment is None or not a.segment.in_progress:
                continue
            if seen_epoch(a) > seen_epoch(f) and a.segment.end_txid != f.segment.end_txid:
                raise RecoveryInvariantError(
                    f"segment {f.segment.start_txid} is finalized at txid "
                    f"{f.segment.end_txid} ({describe_response(f)}) but a newer epoch's "
                    f"copy ends at {a.segment.end_txid} ({describe_response(a)}): "
                    "evidence of an unacknowledged finalize; refusing to recover from it"
                )
