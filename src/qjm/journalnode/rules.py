"""The acceptor's rules as pure functions: no I/O, no wire messages (design §J.1-§J.4).

Each takes a frozen snapshot of one journal's state (JournalState) and plain request values
(Request and ints), and returns a decision or raises the typed refusal the wire carries,
so every rule is a row of a table test (tests/test_acceptor_rules.py). journal.Journal
snapshots its state, asks these functions, and does the disk work they allow.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from qjm.config import parse_address
from qjm.errors import ConfigError
from qjm.journalnode.storage import MemberChangeRecord
from qjm.protocol import qjournal_pb2 as pb
from qjm.protocol.errors import (
    AcceptedStateMismatchError,
    AmnesiacNodeError,
    AwaitingNewEpochError,
    CommittedTxidLossError,
    CommittedTxidRegressionError,
    EmptyFinalizeError,
    EpochLimitError,
    EpochNotNewerError,
    FinalizedReplaceError,
    FinalizeEndMismatchError,
    FinalizeRefusedError,
    InvalidRequestError,
    IpcSerialError,
    IpcSerialLimitError,
    JournalInUseError,
    JournalNotFormattedError,
    MemberChangePendingError,
    MembershipMismatchError,
    MissingEpochError,
    NewerAcceptError,
    NoOpenSegmentError,
    NotWriterEpochError,
    PurgeRefusedError,
    SegmentStartError,
    SegmentStateError,
    StaleEpochError,
    TxidGapError,
    UnpromisedEpochError,
    WrongSegmentError,
)
from qjm.protocol.member_change import MemberChange
from qjm.protocol.namespace import NamespaceInfo, same_namespace

__all__ = [
    "FORMAT_QUIET_SECONDS",
    "MAX_EPOCH",
    "MAX_EPOCH_STEP",
    "AcceptAction",
    "Accepted",
    "JournalState",
    "MemberChangeStep",
    "OnDisk",
    "Request",
    "accept_action",
    "check_accepted_matches",
    "check_batch",
    "check_discard",
    "check_finalize_end",
    "check_finalize_range",
    "check_format_in_use",
    "check_formatted",
    "check_join_without_storage",
    "check_may_finalize",
    "check_may_vote",
    "check_member_addresses",
    "check_members",
    "check_new_epoch",
    "check_purge",
    "check_refinalize",
    "check_replace_finalized",
    "check_request",
    "check_segment_start",
    "check_writer_call",
    "check_writer_epoch",
    "committed_txid_to_record",
    "describe_segment",
    "discard_without_epoch",
    "member_change_step",
    "segments_to_discard",
    "serves_cached_edits",
    "serves_for_recovery",
    "start_layout_version",
]

# A proposed epoch may be at most this far above the last promise, and below MAX_EPOCH:
# one new_epoch must never use up the epochs every later writer needs (HDFS has no limit).
MAX_EPOCH_STEP = 1_000_000
MAX_EPOCH = 2**62
# A formatted journal whose writer promised or called within this many seconds is in use:
# format wipes it only when forced for its own namespace (check_format_in_use).
FORMAT_QUIET_SECONDS = 10.0


@dataclass(frozen=True, slots=True)
class JournalState:
    """What the rules read of one journal: its promise, writer, serial and txids."""

    jid: str
    formatted: bool = True
    last_promised_epoch: int = 0
    last_writer_epoch: int = 0
    ipc_serial: int = -1  # the highest IPC serial taken in the promised epoch
    committed_txid: int | None = None
    highest_written_txid: int = 0
    open_segment: int | None = None  # the start txid of the segment open for the writer
    awaiting_new_epoch: str | None = None  # why writers wait for a new_epoch
    amnesiac: str | None = None  # why this node may not vote in recovery


@dataclass(frozen=True, slots=True)
class Request:
    """A writer's request header: its epoch, IPC serial and reported committed txid."""

    epoch: int
    ipc_serial: int = 0
    committed_txid: int | None = None

    @classmethod
    def of(cls, req: pb.RequestInfoProto) -> Request:
        """The plain values of a wire request header."""
        committed = req.committed_txid if req.HasField("committed_txid") else None
        return cls(req.epoch, req.ipc_serial, committed)


@dataclass(frozen=True, slots=True)
class Accepted:
    """A segment's paxos record: the end it accepted (or decided) and in which epoch."""

    end_txid: int
    epoch: int


@dataclass(frozen=True, slots=True)
class OnDisk:
    """This node's copy of a segment, as accept_recovery compares it with the chosen one."""

    start_txid: int
    end_txid: int
    in_progress: bool
    corrupt: bool = False
    decided_epoch: int | None = None  # for a finalized copy: the epoch that decided it


@dataclass(frozen=True, slots=True)
class MemberChangeStep:
    """This node's part of a member change: the change's epoch and what to write."""

    epoch: int  # the change's epoch; 0: a rerun on a node that kept no record of it
    already_changed: bool = False  # the node holds the new members: write nothing but a mark
    record: MemberChangeRecord | None = None  # persist before the members; None: keep the old
    mark_joined: bool = False  # mark the node amnesiac: it joined in this change


@dataclass(frozen=True, slots=True)
class AcceptAction:
    """What an accept_recovery must do: fetch the chosen log, and compare it with ours."""

    fetch: bool = False
    compare: bool = False  # same end as ours: keep ours when the bytes are the same


def describe_segment(start: int, end: int, in_progress: bool) -> str:
    """A segment's range and kind, as refusals name it."""
    kind = "in progress" if in_progress else "finalized"
    return f"{start}-{end} ({kind})"


# -- every request (design §J.1) -------------------------------------------------------------


def check_formatted(state: JournalState) -> None:
    """Refuse any call on a journal without formatted storage."""
    if not state.formatted:
        raise JournalNotFormattedError(
            f"journal {state.jid!r} is not formatted on this JournalNode; run `qjm journal format`"
        )


def check_request(state: JournalState, req: Request) -> None:
    """Validate a request's epoch, IPC serial and committed txid against the promise."""
    check_formatted(state)
    jid = state.jid
    if req.epoch <= 0:
        raise MissingEpochError(
            f"request for journal {jid!r} carries no epoch ({req.epoch}); a writer "
            "must win new_epoch first"
        )
    if req.ipc_serial >= MAX_EPOCH:
        # HDFS takes any long; serials count a writer's calls, so one at the epochs'
        # bound is no honest writer's, and would leave it no room (design §J.1).
        raise IpcSerialLimitError(
            f"IPC serial {req.ipc_serial} of journal {jid!r} is at or above the "
            "bound 2**62 that serials share with epochs"
        )
    promised = state.last_promised_epoch
    if req.epoch < promised:
        raise StaleEpochError(
            f"IPC's epoch {req.epoch} is less than the last promised epoch "
            f"{promised} (journal {jid!r}): a newer writer has "
            "taken over"
        )
    if req.epoch > promised:
        # HDFS raises the promise from any request; we raise it only in new_epoch, so
        # every writer passes new_epoch's checks (namespace, membership, a restored
        # node's marker) and the edits cache is cleared with every promise.
        raise UnpromisedEpochError(
            f"epoch {req.epoch} was never promised here (last promise "
            f"{promised}, journal {jid!r}); call new_epoch first"
        )
    if req.ipc_serial <= state.ipc_serial:
        raise IpcSerialError(
            f"IPC serial {req.ipc_serial} in epoch {req.epoch} is not higher than the "
            f"prior serial {state.ipc_serial} (journal {jid!r})"
        )
    if (
        req.committed_txid is not None
        and state.committed_txid is not None
        and req.committed_txid < state.committed_txid
    ):
        raise CommittedTxidRegressionError(
            f"client tried to move the committed txid backward from "
            f"{state.committed_txid} to {req.committed_txid} (journal {jid!r})"
        )


def check_writer_call(state: JournalState, req: Request) -> None:
    """Refuse every writer call while the journal awaits a new_epoch, then check req."""
    if state.awaiting_new_epoch is not None and req.epoch > 0:
        raise AwaitingNewEpochError(
            f"journal {state.jid!r} {state.awaiting_new_epoch} and awaits a new writer's "
            f"new_epoch (last promise {state.last_promised_epoch}): the writer of epoch "
            f"{req.epoch} may not write or vote here until then"
        )
    check_request(state, req)


def check_writer_epoch(state: JournalState, req: Request) -> None:
    """Refuse a call that needs the current writer's epoch from any other epoch."""
    if req.epoch != state.last_writer_epoch:
        raise NotWriterEpochError(
            f"IPC's epoch {req.epoch} is not the current writer epoch "
            f"{state.last_writer_epoch} (journal {state.jid!r}): start a segment first"
        )


def committed_txid_to_record(
    state: JournalState, req: Request, written_through: int | None = None
) -> int | None:
    """The committed txid a checked request makes this node record; None: keep the old one.

    A claim above the highest written txid (plus the batch of the same request) is not
    stored: the request still succeeds, because a lagging node is legitimately told a
    committed txid above its batch. From this node's current writer (its epoch is the
    writer epoch) the claim is cut to the highest txid here, so a lagging node's reads
    advance; that bound is only a number, not a proof that this node's copy holds the
    committed values (an older writer's leftover segment may end higher), which is why
    nothing is served from a segment of another epoch (Journal._is_current_writers).
    HDFS stores any claim; one heartbeat could then wedge every later recovery.
    """
    txid = req.committed_txid
    if txid is None or txid == state.committed_txid:
        return None
    bound = max(state.highest_written_txid, written_through or 0)
    if txid > bound:
        if req.epoch != state.last_writer_epoch or bound <= (state.committed_txid or 0):
            return None
        txid = bound
    return txid


# -- the promise (design §J.1, §J.7) -----------------------------------------------------------


def check_new_epoch(state: JournalState, epoch: int) -> None:
    """Refuse a proposed epoch not above the promise, or one that leaves later writers none."""
    promised = state.last_promised_epoch
    if epoch <= promised:
        raise EpochNotNewerError(
            f"proposed epoch {epoch} <= last promise {promised} (journal {state.jid!r})"
        )
    limit = min(promised + MAX_EPOCH_STEP, MAX_EPOCH - 1)
    if epoch > limit:
        raise EpochLimitError(
            f"proposed epoch {epoch} is above the limit {limit} of journal {state.jid!r}: "
            f"at most {MAX_EPOCH_STEP} above the last promise {promised} "
            "and below 2**62, so that epochs never run out"
        )


def check_members(
    jid: str,
    named: Sequence[str],
    held: Sequence[str] | None,
    change: MemberChangeRecord | None,
) -> None:
    """Refuse a writer whose URI names another member set than this node holds.

    After a member change the old set's writer is refused too (design §J.7): its
    majorities need not meet the new set's. No names or no stored set: nothing to compare.
    """
    if not named or held is None:
        return  # an old writer or old storage: nothing to compare
    names = sorted(named)
    if names == list(held):
        return
    if change is not None and tuple(names) == change.old:
        raise MembershipMismatchError(
            f"writer's URI names {names}, the members journal {jid!r} had before the "
            f"member change recorded in epoch {change.epoch}; its members are now "
            f"{list(held)}: update every NameNode's shared edits URI to "
            f"qjournal://{';'.join(held)}/{jid} and restart it"
        )
    holds = (
        f"has the members {list(held)} since the member change in epoch {change.epoch}"
        if change is not None
        else f"was formatted for {list(held)}"
    )
    raise MembershipMismatchError(f"writer's URI names {names} but journal {jid!r} {holds}")


def check_member_addresses(members: Sequence[str], which: str) -> None:
    """Refuse a member that is not one host:port (the members file holds one per line)."""
    for m in members:
        try:
            parse_address(m, f"{which} member {m!r}")
        except ConfigError:
            raise InvalidRequestError(f"{which} member {m!r} is not host:port") from None
        if any(c.isspace() or c in ";/," for c in m):
            raise InvalidRequestError(f"{which} member {m!r} is not host:port")


def check_join_without_storage(state: JournalState, change: MemberChange, joining: bool) -> None:
    """Refuse a member change on an unformatted node unless it joins in that change (§J.7)."""
    if not joining:
        raise JournalNotFormattedError(
            f"journal {state.jid!r} is not formatted on this JournalNode and it is not "
            f"joining in this change ({change.describe()}); only a joining node may be "
            "set up by a member change"
        )


def member_change_step(
    state: JournalState,
    held: Sequence[str] | None,
    recorded: MemberChangeRecord | None,
    change: MemberChange,
    joining: bool,
) -> MemberChangeStep:
    """What a formatted node does for a member change from its held members (§J.7).

    A rerun on a node that holds the new members already changes nothing but may re-mark
    a joining node; a rerun cut short after its record reuses that record; otherwise the
    change is recorded with this node's promise. One change at a time: a recorded change
    no writer of the new members has started a segment since is refused.
    """
    jid = state.jid
    if held is not None and list(held) == list(change.new):
        epoch = recorded.epoch if recorded is not None and recorded.new == change.new else 0
        # A copy of a staying node's directory made after the change: its data is not
        # its own until a writer of the new members starts a segment here.
        mark = bool(
            joining and epoch and state.last_writer_epoch <= epoch and state.amnesiac is None
        )
        return MemberChangeStep(epoch, already_changed=True, mark_joined=mark)
    if held is not None and list(held) != list(change.old):
        raise MembershipMismatchError(
            f"journal {jid!r} holds the members {list(held)} here, neither the old "
            f"members {list(change.old)} nor the new ones {list(change.new)} of this change"
        )
    if recorded is not None and (recorded.old, recorded.new) == (change.old, change.new):
        # a rerun of this change, cut short after its record
        return MemberChangeStep(recorded.epoch, mark_joined=joining)
    # One change at a time (design §J.7): the next change's quorums assume the joining
    # node holds the new writer's data, true only once it started a segment; until then
    # only the staying nodes carry what the old set committed.
    if recorded is not None and state.last_writer_epoch <= recorded.epoch:
        raise MemberChangePendingError(
            f"journal {jid!r} has a pending member change, recorded in epoch "
            f"{recorded.epoch} (from {list(recorded.old)} to {list(recorded.new)}): no "
            f"writer of its new members has started a segment here since (last writer "
            f"epoch {state.last_writer_epoch}). One change at a time: restart the "
            "NameNodes with the new shared edits URI (standby first, then fail over) "
            "so that a writer starts a segment, then change again"
        )
    record = MemberChangeRecord(state.last_promised_epoch, change.old, change.new)
    return MemberChangeStep(record.epoch, record=record, mark_joined=joining)


# -- format (design §J.8) ----------------------------------------------------------------------


def check_format_in_use(
    state: JournalState,
    mine: NamespaceInfo | None,
    ns: NamespaceInfo,
    force: bool,
    idle_seconds: float | None,
) -> str | None:
    """Refuse to format a journal in use unless forced for the namespace it holds (§J.8).

    mine: the namespace the journal holds (None: unformatted); idle_seconds: since its
    last promise or writer call (None: none since the format). Returns why it is in use
    when a forced format for its own namespace wipes it all the same; None: not in use.
    HDFS formats whenever force is given, so one call could wipe every acknowledged
    edit of a live cluster. Here a formatted journal whose writer holds an open
    segment, or promised or made a call within FORMAT_QUIET_SECONDS, is in use.
    """
    if mine is None:
        return None
    if state.open_segment is not None:
        why = (
            f"segment {state.open_segment} is open for the writer of epoch "
            f"{state.last_writer_epoch}"
        )
    elif idle_seconds is not None and idle_seconds < FORMAT_QUIET_SECONDS:
        why = (
            f"it promised epoch {state.last_promised_epoch} or took a writer call "
            f"{idle_seconds:.0f}s ago"
        )
    else:
        return None
    if force and same_namespace(ns, mine):
        return why
    raise JournalInUseError(
        f"journal {state.jid!r} is in use: {why}; a journal in use is formatted only "
        f"with force and its own namespace ({mine.describe()}; this request has "
        f"{ns.describe()}{'' if force else ' without force'}), or once its writer was "
        f"idle for {FORMAT_QUIET_SECONDS:g}s"
    )


# -- segments (design §J.2, §J.3) --------------------------------------------------------------


def start_layout_version(
    txid: int, layout_version: int, default: int, oldest_supported: int
) -> int:
    """The layout a segment starting at txid is written in (0: default), or a refusal.

    Layout versions are negative and grow more negative with each format change, so
    "too old" is one above oldest_supported.
    """
    if txid <= 0:
        raise InvalidRequestError(f"segment start txid must be positive, got {txid}")
    if layout_version == 0:
        return default
    if layout_version > oldest_supported:
        raise InvalidRequestError(
            f"layout version {layout_version} is not supported (need "
            f"{oldest_supported} or newer, i.e. smaller)"
        )
    return layout_version


def check_segment_start(state: JournalState, req: Request, txid: int, restart: bool) -> None:
    """A new segment starts above every txid here and right after the writer's committed.

    restart: txid names the newest in-progress segment, holding at most one txn.
    """
    committed, written = state.committed_txid, state.highest_written_txid
    where = f"can't start a segment at txid {txid} in journal {state.jid!r}"
    if committed is not None and txid <= committed:
        raise SegmentStartError(f"{where}: txid {txid} is not above the committed txid {committed}")
    # Re-starting the newest in-progress segment that holds at most one txn is allowed,
    # as in HDFS (the writer may have crashed right after its first batch).
    if txid <= written and not (restart and written <= txid):
        raise SegmentStartError(
            f"{where}: txid {txid} is not above the highest written txid {written}"
        )
    # Everything before a segment is acknowledged when the writer starts it, so the
    # txid it reports committed is at least txid - 1; a start further on would leave
    # txids no node holds. (It may be higher: the start reaches a lagging node after
    # the first batches were acknowledged elsewhere.) HDFS has no such check. A gap
    # after this node's own highest txid, though, is only txids this node missed:
    # accepted, as in HDFS, because a writer finalizes one segment and starts the next
    # back to back, so refusing would keep a node that missed one segment out for
    # good; the syncer fills the gap (start_log_segment wakes it).
    if req.committed_txid is not None and txid > req.committed_txid + 1:
        raise SegmentStartError(
            f"{where}: the writer reports txid {req.committed_txid} committed, so its "
            f"next segment starts at {req.committed_txid + 1}; txids would be skipped"
        )


def check_batch(
    state: JournalState, next_txid: int, segment_txid: int, first_txid: int, num_txns: int
) -> None:
    """Refuse a batch for another segment than the open one, or not at the next txid."""
    jid, open_segment = state.jid, state.open_segment
    if open_segment is None:
        raise NoOpenSegmentError(
            f"can't write txid {first_txid}: no segment is open on journal {jid!r}"
        )
    if segment_txid != open_segment:
        raise WrongSegmentError(
            f"writer out of sync: it writes segment {segment_txid} but the open segment "
            f"is {open_segment} (journal {jid!r})"
        )
    if first_txid != next_txid:
        raise TxidGapError(
            f"can't write txid {first_txid}: expecting next txid {next_txid} "
            f"(journal {jid!r}); gaps and reordering are refused"
        )
    if num_txns < 0:
        raise InvalidRequestError(f"num_txns must not be negative, got {num_txns}")


def check_finalize_range(state: JournalState, start_txid: int, end_txid: int) -> None:
    """Refuse to finalize an empty segment (an end before the start)."""
    # HDFS allows end = start - 1 (an empty segment); an edits_6-5 then fails every
    # later recovery, so an empty segment is never finalized here.
    if end_txid < start_txid:
        raise EmptyFinalizeError(
            f"can't finalize segment {start_txid} of journal {state.jid!r}: its end "
            f"{end_txid} is before its start {start_txid}"
        )


def check_refinalize(name: str, finalized_end: int, end_txid: int) -> None:
    """A finalize of a finalized segment repeats its end, or is refused."""
    if finalized_end != end_txid:
        raise FinalizeEndMismatchError(
            f"trying to re-finalize already finalized segment {name} "
            f"with a different end txid {end_txid}"
        )


def check_finalize_end(start_txid: int, end_txid: int, last_txid: int | None, open: bool) -> None:
    """An in-progress segment is finalized at the last txid it holds (open: the writer's)."""
    if last_txid != end_txid:
        held = "only written up to" if open else "the disk only contains up to"
        raise FinalizeEndMismatchError(
            f"trying to finalize in-progress segment {start_txid} to end at txid "
            f"{end_txid} but {held} txid {last_txid}"
        )


def check_may_finalize(
    state: JournalState,
    req: Request,
    start_txid: int,
    end_txid: int,
    accepted: Accepted | None,
    current_writers: bool,
) -> None:
    """Finalize an in-progress segment only as decided (design §J.3).

    Either a recovery accepted it in the request's epoch, or it is the current
    writer's own segment (current_writers) and the writer reports every txid up to the
    end committed. A deposed writer that still calls the API cannot then make its
    unacknowledged tail a finalized segment (HDFS finalizes any length the writer names).
    """
    if accepted is not None and accepted.epoch == req.epoch and accepted.end_txid == end_txid:
        return
    jid = state.jid
    if not (req.epoch == state.last_writer_epoch and current_writers):
        raise FinalizeRefusedError(
            f"can't finalize in-progress segment {start_txid} of journal {jid!r}: it "
            f"was neither written by the writer of epoch {req.epoch} (writer epoch here "
            f"{state.last_writer_epoch}, promise {state.last_promised_epoch}) nor accepted "
            f"in a recovery in epoch {req.epoch}"
        )
    reported = req.committed_txid
    if reported is None or reported < end_txid:
        said = "reports no committed txid" if reported is None else f"reports {reported}"
        raise FinalizeRefusedError(
            f"can't finalize segment {start_txid} of journal {jid!r} at txid "
            f"{end_txid}: the writer of epoch {req.epoch} {said} committed, and a segment "
            "is finalized only up to a txid its writer reports committed"
        )


def check_purge(state: JournalState, min_txid_to_keep: int) -> None:
    """Refuse a purge that would reach into the open segment."""
    if state.open_segment is not None and state.open_segment < min_txid_to_keep:
        raise PurgeRefusedError(
            f"can't purge below txid {min_txid_to_keep}: the open segment starts at "
            f"{state.open_segment}"
        )


def discard_without_epoch(state: JournalState, start_txid: int) -> MissingEpochError:
    """The refusal of a discard that carries no writer epoch (on a formatted journal)."""
    check_formatted(state)
    return MissingEpochError(
        f"{_discard_where(state, start_txid)}: the request carries no writer epoch; a "
        "discard needs the epoch of a writer that fenced the others (won new_epoch), as "
        "every call that changes a journal does (Hadoop's NameNode sends none)"
    )


def check_discard(state: JournalState, req: Request, start_txid: int) -> None:
    """Refuse a discard from start_txid unless it comes from a fresh writer epoch (§J.8).

    It needs the epoch this node promised last, from a caller that has not started a
    segment in that epoch.
    """
    check_writer_call(state, req)
    where = _discard_where(state, start_txid)
    if start_txid <= 0:
        raise InvalidRequestError(f"{where}: the txid must be positive")
    if state.last_writer_epoch >= req.epoch:
        # A writer of this epoch started segments here: a deposed writer on a node that
        # never heard of its successor holds the promise too. A rollback comes from a
        # caller that won a fresh epoch for it and has written nothing (§J.8).
        raise SegmentStateError(
            f"{where}: the writer of epoch {req.epoch} has started segments here; a "
            "discard comes from a caller that won a new epoch and has not written"
        )


def segments_to_discard(
    state: JournalState, start_txid: int, segments: Sequence[tuple[str, int, int]]
) -> list[int]:
    """The indexes of the segments (name, start, last txid) a discard from start_txid deletes.

    A discard that would cut a segment in two is refused.
    """
    doomed = []
    for i, (name, start, end) in enumerate(segments):
        if start < start_txid <= end:
            raise SegmentStateError(
                f"{_discard_where(state, start_txid)}: segment {name} holds txids "
                f"{start}-{end}, across that txid"
            )
        if start >= start_txid:
            doomed.append(i)
    return doomed


def _discard_where(state: JournalState, start_txid: int) -> str:
    return f"can't discard the segments of journal {state.jid!r} from txid {start_txid}"


# -- reads ---------------------------------------------------------------------------------


def serves_cached_edits(state: JournalState, since_txid: int) -> bool:
    """True when the edits cache may answer from since_txid: the current writer's edits.

    The cache only ever holds the current writer's batches, and is served only while
    that writer still holds the promise.
    """
    return not (
        since_txid > state.highest_written_txid
        or state.last_writer_epoch != state.last_promised_epoch
        or state.awaiting_new_epoch
    )


def serves_for_recovery(state: JournalState, recovery_epoch: int) -> bool:
    """True when an in-progress segment may be served to a recovery of recovery_epoch."""
    return (
        recovery_epoch > 0
        and recovery_epoch == state.last_promised_epoch
        and state.awaiting_new_epoch is None
    )


# -- recovery, Paxos phases 1b and 2b (design §J.4, §J.5) --------------------------------------


def check_may_vote(state: JournalState, segment_txid: int) -> None:
    """Refuse a prepare_recovery on an amnesiac node (one that lost what it promised)."""
    if state.amnesiac is not None:
        # An amnesiac acceptor (it lost what it promised and accepted) must not vote:
        # "no segment" could hide txids it acknowledged, and with a lagging node it would
        # form a quorum that truncates them. HDFS has no such rule; it lets the node vote.
        raise AmnesiacNodeError(
            f"journal {state.jid!r} {state.amnesiac}, so it may not answer "
            f"prepare_recovery of segment {segment_txid} (its empty answer could hide "
            "acknowledged txids) until a writer starts a segment on it; recover with "
            "a quorum of the other nodes"
        )


def check_accepted_matches(
    state: JournalState, segment_txid: int, on_disk_end: int | None, accepted: str, end: int
) -> None:
    """An accepted (not yet finalized) recovery's end is the end of the copy on disk."""
    if on_disk_end is None or on_disk_end != end:
        where = f"ends at {on_disk_end}" if on_disk_end is not None else "is absent"
        raise AcceptedStateMismatchError(
            f"journal {state.jid!r}: segment {segment_txid} on disk {where}, but the "
            f"accepted recovery is {accepted}"
        )


def check_replace_finalized(
    state: JournalState, req: Request, current: OnDisk, chosen: str
) -> None:
    """Refuse to replace a finalized copy unless an older epoch decided it (§J.4).

    HDFS never replaces a finalized segment in a recovery. Here a recovery's choice
    wins over a finalized copy an older epoch decided: an honest decision is never
    contradicted by a later recovery, so a copy that differs from the chosen log is a
    deposed writer's. A copy decided in this request's own epoch is never replaced.
    Without a recorded decision the writer epoch here stands for it.
    """
    decided = current.decided_epoch
    epoch = decided if decided is not None else state.last_writer_epoch
    if epoch >= req.epoch:
        raise FinalizedReplaceError(
            f"asked to replace finalized segment {current.start_txid}-{current.end_txid} "
            f"(decided in epoch {epoch}) with {chosen} in epoch {req.epoch}"
        )


def accept_action(
    state: JournalState,
    req: Request,
    start: int,
    end: int,
    in_progress: bool,
    chosen_decided_epoch: int | None,
    accepted_epoch: int | None,
    current: OnDisk | None,
    has_url: bool,
) -> AcceptAction:
    """Check an accept_recovery of start-end; say whether to fetch it and compare (§J.4).

    in_progress: the chosen copy's kind; chosen_decided_epoch: the epoch that decided
    it, when the recovery chose a finalized copy with a recorded decision;
    accepted_epoch: the epoch of this segment's paxos record here, if any; current: this
    node's copy; has_url: the request names a source. The URL itself is checked by the
    caller.
    """
    check_writer_call(state, req)
    chosen = describe_segment(start, end, in_progress)
    if not (end > 0 and end >= start):
        raise InvalidRequestError(
            f"bad recovery state {chosen}: the end must be positive and not before the start"
        )
    if accepted_epoch is not None and accepted_epoch > req.epoch:
        raise NewerAcceptError(
            f"segment {start} was already accepted in epoch {accepted_epoch}, "
            f"newer than this request's epoch {req.epoch}"
        )
    fetch = compare = False
    # A corrupt copy of ours is "different": fetch the chosen one and replace it, so
    # that the recovery repairs this node.
    if current is None or current.end_txid != end or current.corrupt:
        if current is not None:
            committed = state.committed_txid
            if (
                committed is not None
                and current.start_txid <= committed <= current.end_txid
                and not (start <= committed <= end)
            ):
                raise CommittedTxidLossError(
                    f"can't replace segment {current.start_txid}-{current.end_txid} with "
                    f"{start}-{end}: that would discard committed txid {committed}"
                )
            if not current.in_progress:
                check_replace_finalized(state, req, current, chosen)
        fetch = True
    elif not current.in_progress:
        # Our finalized copy ends where the chosen one does. It is the chosen log if the
        # same epoch decided both; otherwise the bytes are compared, since a deposed
        # writer's finalized copy may end at the same txid (design §J.4).
        same_decision = (
            chosen_decided_epoch is not None and current.decided_epoch == chosen_decided_epoch
        )
        if has_url and not same_decision:
            check_replace_finalized(state, req, current, chosen)
            fetch = compare = True
    elif has_url:
        # The same length is not the same log: a node that refused a newer writer's
        # start_log_segment keeps an older writer's ops, which may end at the same txid.
        # Only the source itself is sent no URL: its copy is the chosen one.
        fetch = compare = True
    if fetch and not has_url:
        raise InvalidRequestError(f"accept_recovery of {chosen} needs a URL to fetch it from")
    return AcceptAction(fetch, compare)
