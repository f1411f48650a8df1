"""The quorum journal client's decisions as pure functions: no I/O, no wire messages.

Each takes plain values or the small frozen records below, and returns a decision or
raises a typed refusal, so every rule is a row of a table test (tests/test_decisions.py).
The callers turn the nodes' answers into these records and act on the result.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Generic, Protocol, TypeVar

from qjm.client.recovery_comparator import (
    RecoveryAnswer,
    RecoveryInvariantError,
    Segment,
    choose_recovery_source,
    describe_response,
)
from qjm.errors import QjmError
from qjm.protocol.quorum import majority_of

__all__ = [
    "BelowCommittedError",
    "CachedEdits",
    "EpochAnswer",
    "FinalizedEndsDisagree",
    "FormatRefused",
    "MergedManifest",
    "MergedSegment",
    "NoMajorityError",
    "NodeManifest",
    "NothingToRecover",
    "RecoveryAnswer",
    "RecoveryInvariantError",
    "RecoveryPlan",
    "RestoredNodesError",
    "Segment",
    "current_writers",
    "durable_cached_run",
    "durable_end",
    "format_refusal",
    "majority_of",
    "merge_manifests",
    "newest_segment",
    "next_epoch",
    "plan_recovery",
]

K = TypeVar("K")


class FormatRefused(QjmError):
    """Format was refused: a node is unreachable or already holds the journal."""


class NoMajorityError(QjmError):
    """A decision that needs the answers of a majority got fewer."""


def _need_majority(what: str, answered: int, members: int) -> None:
    if members < 1:
        raise ValueError(f"{what}: a journal has at least one JournalNode, got {members}")
    need = majority_of(members)
    if answered < need:
        raise NoMajorityError(
            f"{what} needs the answers of a majority ({need} of {members} JournalNodes), "
            f"got {answered}"
        )


# -- format --------------------------------------------------------------------------------


def format_refusal(
    nodes: Iterable[K], answered: Collection[K], errors: Mapping[K, object]
) -> FormatRefused | None:
    """Why a format is refused when a JournalNode did not answer; None if every node did.

    Format needs every node: one that missed it would keep an older journal's segments
    and epochs, and vote with them. errors names why a node did not answer, where known.
    """
    down = [f"{k} ({errors.get(k, 'no answer')})" for k in nodes if k not in answered]
    if not down:
        return None
    return FormatRefused(
        "format needs every JournalNode to answer; unreachable: " + "; ".join(down)
    )


# -- the epoch -------------------------------------------------------------------------------


def next_epoch(promised: Collection[int], members: int) -> int:
    """The epoch a new writer proposes: one above every promise a majority reported (2.5)."""
    _need_majority("choosing a new epoch", len(promised), members)
    return max(promised) + 1


@dataclass(frozen=True)
class EpochAnswer:
    """One node's new_epoch answer: its newest segment, and whether it lost its data."""

    last_segment_txid: int | None
    restored: bool = False


class RestoredNodesError(NoMajorityError):
    """Too few of the answering nodes kept their data to say where the log ends."""

    def __init__(self, message: str, kept: Collection[object], restored: Collection[object]):
        super().__init__(message)
        self.kept = tuple(kept)
        self.restored = tuple(restored)


def newest_segment(answers: Mapping[K, EpochAnswer], members: int) -> int | None:
    """The segment a new writer recovers: the newest a majority of kept-data nodes reports.

    A node restored from its peers after losing its storage may lack acknowledged txids,
    so its answer does not count (design §J.5): a majority of all members must be nodes
    that kept their data, and the newest segment any of them holds is the one to recover.
    HDFS counts every answer.
    """
    if members < 1:
        raise ValueError(f"a journal has at least one JournalNode, got {members}")
    kept = [k for k, a in answers.items() if not a.restored]
    restored = [k for k, a in answers.items() if a.restored]
    need = majority_of(members)
    if len(kept) < need:
        lost = ", ".join(map(str, restored)) or "none"
        raise RestoredNodesError(
            f"only {len(kept)} of the answering JournalNodes kept their data "
            f"({', '.join(map(str, kept)) or 'none'}); restored after losing their storage: "
            f"{lost}; a writer needs {need} of {members} nodes that kept their data to know "
            "where the log ends",
            kept,
            restored,
        )
    txids = [a.last_segment_txid for k, a in answers.items() if k in kept]
    found = [t for t in txids if t is not None]
    return max(found) if found else None


# -- the recovery of one segment ---------------------------------------------------------------


class BelowCommittedError(RecoveryInvariantError):
    """The chosen recovery source ends below a txid some node reports as committed."""


@dataclass(frozen=True)
class NothingToRecover:
    """No answering node has the segment: none of its txns was committed (design §J.12)."""

    segment_txid: int
    reason: str

    @property
    def last_txid(self) -> int:
        """The journal's last txid: a majority finalized the segment before this one."""
        return self.segment_txid - 1


@dataclass(frozen=True)
class RecoveryPlan(Generic[K]):
    """Accept the source's copy of the segment on every node, then finalize it there."""

    segment_txid: int
    source: K
    state: Segment
    reason: str

    @property
    def last_txid(self) -> int:
        """The journal's last txid once the plan is carried out."""
        return self.state.end_txid


def _reason(best: RecoveryAnswer) -> str:
    """Why the comparator chose this copy, in words (design §J.4's rules)."""
    assert best.segment is not None
    if not best.segment.in_progress:
        return "the finalized copy"
    if best.accepted_in_epoch is not None and best.accepted_in_epoch >= best.last_writer_epoch:
        return f"the recovery already accepted in epoch {best.accepted_in_epoch}"
    return f"the longest log of the newest writer (epoch {best.last_writer_epoch})"


def plan_recovery(
    segment_txid: int, answers: Mapping[K, RecoveryAnswer], members: int
) -> RecoveryPlan[K] | NothingToRecover:
    """The outcome of prepare_recovery answers for a segment: what to accept, from whom, why.

    Refuses (raises) with fewer answers than a majority, an answer about another segment,
    answers that contradict the protocol's invariants (RecoveryInvariantError), and a
    source that ends below a txid some node reports committed (BelowCommittedError).
    """
    _need_majority(f"recovering segment {segment_txid}", len(answers), members)
    for key, a in answers.items():
        if a.segment is not None and a.segment.start_txid != segment_txid:
            raise RecoveryInvariantError(
                f"recovering segment {segment_txid}, but {key} answered about {a.segment}"
            )
    chosen = choose_recovery_source(answers.items())
    if chosen is None:
        return NothingToRecover(
            segment_txid, f"none of {len(answers)} answering nodes has a segment at {segment_txid}"
        )
    source, best = chosen
    assert best.segment is not None
    state = best.segment
    for key, a in answers.items():
        if a.last_committed_txid is not None and a.last_committed_txid > state.end_txid:
            raise BelowCommittedError(
                f"recovery of segment {state.start_txid} chose {source} ending at txid "
                f"{state.end_txid} ({describe_response(best)}), but {key} reports txid "
                f"{a.last_committed_txid} as committed; refusing to truncate below it"
            )
    return RecoveryPlan(segment_txid, source, state, _reason(best))


# -- what a reader may read --------------------------------------------------------------------


class _EpochAnswer(Protocol):
    @property
    def last_writer_epoch(self) -> int: ...

    @property
    def last_promised_epoch(self) -> int: ...

    @property
    def restored(self) -> bool: ...


A = TypeVar("A", bound=_EpochAnswer)


def current_writers(answers: Mapping[K, A]) -> set[K]:
    """The nodes whose in-progress edits and committed txid a reader may use (D3).

    Only nodes at the highest writer epoch among the answers, and only while that epoch
    is also their promise: a node that a newer writer fenced, or that missed the newest
    writer's segments, may hold a fenced writer's unacknowledged tail, and the committed
    txid it learned from heartbeats validates only the newest writer's data.

    A node restored from its peers after losing its storage counts for nothing here
    until a writer starts a segment on it (design §J.5).
    """
    kept = {k: a for k, a in answers.items() if not a.restored}
    if not kept:
        return set()
    top = max(a.last_writer_epoch for a in kept.values())
    return {
        k
        for k, a in kept.items()
        if a.last_writer_epoch == top and a.last_promised_epoch == a.last_writer_epoch
    }


def durable_end(
    start_txid: int, ends: Collection[int], committed_txid: int | None, members: int
) -> int | None:
    """The last txid from start_txid on that a majority of all members holds and the writer
    reported committed; None when no txid from start_txid on is both."""
    need = majority_of(members)
    if len(ends) < need or committed_txid is None:
        return None  # nothing is committed before the writer's first report
    end = min(sorted(ends, reverse=True)[need - 1], committed_txid)
    return end if end >= start_txid else None


def _writer_committed(committed: Iterable[int | None]) -> int | None:
    values = [c for c in committed if c is not None]
    return max(values) if values else None


@dataclass(frozen=True)
class NodeManifest:
    """What one node's getEditLogManifest answer says, without the wire message."""

    segments: tuple[Segment, ...]
    committed_txid: int | None
    last_writer_epoch: int
    last_promised_epoch: int
    # The epoch that decided each finalized segment, by start txid, where the node knows it.
    decided: Mapping[int, int] = field(default_factory=dict)
    restored: bool = False  # the node lost its storage and was restored from peers

    def decided_epoch(self, seg: Segment) -> int:
        """The epoch that decided a finalized copy (the last writer epoch if unrecorded)."""
        return self.decided.get(seg.start_txid, self.last_writer_epoch)


@dataclass(frozen=True)
class MergedSegment(Generic[K]):
    """A segment a reader may read up to end, and the nodes that hold a copy of it."""

    start: int
    end: int
    in_progress: bool
    holders: tuple[K, ...]


@dataclass(frozen=True)
class MergedManifest(Generic[K]):
    """The readable segments of every answer, by start txid (not yet chained)."""

    segments: tuple[MergedSegment[K], ...]
    committed_txid: int | None
    current: frozenset[K]  # the nodes at the writer's epoch
    notes: tuple[str, ...] = ()  # disagreements a majority settled, for the log


class FinalizedEndsDisagree(QjmError):
    """Nodes disagree on where a finalized segment ends and no end has a majority."""


Copy = tuple[int, int]  # a finalized copy: (end txid, the epoch that decided it)


def _agreed_copy(start: int, copies: Mapping[Copy, list[K]], members: int) -> tuple[Copy, str]:
    """The finalized copy of a segment to read, and a note when the copies disagree.

    Copies are grouped by end and deciding epoch: two copies of one end decided in
    different epochs may hold different bytes (a deposed writer's finalize). The group a
    majority of members holds wins; else the newest epoch's (design §J.10). Newest copies
    of one epoch that end apart break the protocol: FinalizedEndsDisagree.
    """
    if len(copies) == 1:
        return next(iter(copies)), ""
    disagreement = "; ".join(
        f"{end} decided in epoch {epoch} on {len(h)} node(s)"
        for (end, epoch), h in sorted(copies.items())
    )
    note = f"finalized segment {start}: copies differ ({disagreement})"
    held = [c for c, holders in copies.items() if len(holders) >= majority_of(members)]
    if held:
        return held[0], note + "; reading the copies a majority holds"
    newest = max(epoch for _, epoch in copies)
    tops = [c for c in copies if c[1] == newest]
    if len(tops) > 1:
        raise FinalizedEndsDisagree(
            f"JournalNodes disagree on where finalized segment {start} ends: {disagreement}"
        )
    return tops[0], note + f"; reading the copy decided in the newest epoch {newest}"


def merge_manifests(answers: Mapping[K, NodeManifest], members: int) -> MergedManifest[K]:
    """The segments a reader may read from these answers, and up to which txid.

    A finalized segment is read from the copies _agreed_copy picks, unless the current
    writer holds it in progress in a newer epoch than that copy's (the finalized copy is
    then a deposed writer's); an in-progress segment is read only from the writer's
    nodes (current_writers), and only up to durable_end. HDFS's reader takes any
    finalized copy.
    """
    current = current_writers(answers)
    committed = _writer_committed(a.committed_txid for k, a in answers.items() if k in current)
    writer_epoch = max((answers[k].last_writer_epoch for k in current), default=0)
    finalized: dict[int, dict[Copy, list[K]]] = {}
    open_ends: dict[int, dict[K, int]] = {}
    for key, answer in answers.items():
        for seg in answer.segments:
            if not seg.in_progress:
                copy = (seg.end_txid, answer.decided_epoch(seg))
                finalized.setdefault(seg.start_txid, {}).setdefault(copy, []).append(key)
            elif key in current:  # never a fenced writer's unacknowledged tail
                open_ends.setdefault(seg.start_txid, {})[key] = seg.end_txid
    segments: dict[int, MergedSegment[K]] = {}
    notes = []
    for start, copies in finalized.items():
        (end, epoch), note = _agreed_copy(start, copies, members)
        if start in open_ends and epoch < writer_epoch:
            notes.append(
                f"finalized segment {start}-{end} (decided in epoch {epoch}) is older than the "
                f"writer of epoch {writer_epoch}, which holds it in progress; reading that"
            )
            continue
        segments[start] = MergedSegment(start, end, False, tuple(copies[(end, epoch)]))
        if note:
            notes.append(note)
    for start, ends in open_ends.items():
        if start in segments:
            continue  # finalized as decided: that copy wins
        durable = durable_end(start, list(ends.values()), committed, members)
        if durable is not None:
            holders = tuple(k for k, end in ends.items() if end >= durable)
            segments[start] = MergedSegment(start, durable, True, holders)
    ordered = tuple(sorted(segments.values(), key=lambda s: s.start))
    return MergedManifest(ordered, committed, frozenset(current), tuple(notes))


@dataclass(frozen=True)
class CachedEdits:
    """What one node's getJournaledEdits answer says, without the edits themselves."""

    txn_count: int
    committed_txid: int | None
    last_writer_epoch: int
    last_promised_epoch: int
    restored: bool = False


def durable_cached_run(
    answers: Mapping[K, CachedEdits], since_txid: int, max_txns: int, members: int
) -> tuple[int, K | None]:
    """How many cached ops from since_txid a reader may take (at most max_txns), and a node
    of the writer's that holds them; (0, None) when none is durable yet."""
    current = current_writers(answers)
    committed = _writer_committed(a.committed_txid for k, a in answers.items() if k in current)
    ends = [since_txid - 1 + a.txn_count for k, a in answers.items() if k in current]
    end = durable_end(since_txid, ends, committed, members)
    if end is None or max_txns <= 0:
        return 0, None
    count = min(end - since_txid + 1, max_txns)
    source = next(k for k, a in answers.items() if k in current and a.txn_count >= count)
    return count, source
