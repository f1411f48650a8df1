"""The acceptor's pure rules as tables: epoch, serial, committed txid, segments, Paxos accept."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import pytest

from qjm.journalnode import rules
from qjm.journalnode.rules import (
    FORMAT_QUIET_SECONDS,
    MAX_EPOCH,
    MAX_EPOCH_STEP,
    AcceptAction,
    Accepted,
    JournalState,
    MemberChangeStep,
    OnDisk,
    Request,
)
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
from qjm.protocol.member_change import check_member_change
from qjm.protocol.namespace import NamespaceInfo


def cases(table: dict[str, tuple[Any, ...]]) -> Any:
    """Parametrize rows named by their case."""
    return [pytest.param(*row, id=name) for name, row in table.items()]


@dataclass(frozen=True)
class Raises:
    """A table's expected refusal: the error class and a pattern its message matches."""

    error: type[Exception]
    pattern: str


def outcome(expected: object, call: Any) -> None:
    """Assert call() returns expected, or raises it when expected is an error class.

    Raises(error class, pattern): call() raises it with a message the pattern matches.
    """
    if isinstance(expected, type) and issubclass(expected, Exception):
        with pytest.raises(expected):
            call()
    elif isinstance(expected, Raises):
        with pytest.raises(expected.error, match=expected.pattern):
            call()
    else:
        assert call() == expected


# A journal promised to epoch 5, whose writer is epoch 5, took serial 3, holds txids up to 20
# and knows 15 committed.
S = JournalState(
    jid="j",
    last_promised_epoch=5,
    last_writer_epoch=5,
    ipc_serial=3,
    committed_txid=15,
    highest_written_txid=20,
)
R = Request(epoch=5, ipc_serial=4, committed_txid=15)
OK = None  # a check that passes returns None

# -- every request ---------------------------------------------------------------------------

REQUESTS: dict[str, tuple[JournalState, Request, object]] = {
    "the current writer's next call": (S, R, OK),
    "a serial that skips ahead": (S, replace(R, ipc_serial=100), OK),
    "no committed txid reported": (S, replace(R, committed_txid=None), OK),
    "a committed txid moving forward": (S, replace(R, committed_txid=19), OK),
    "unformatted": (replace(S, formatted=False), R, JournalNotFormattedError),
    "no epoch": (S, replace(R, epoch=0), MissingEpochError),
    "a negative epoch": (S, replace(R, epoch=-1), MissingEpochError),
    "a serial at the epochs' bound": (S, replace(R, ipc_serial=MAX_EPOCH), IpcSerialLimitError),
    "a serial just below the bound": (S, replace(R, ipc_serial=MAX_EPOCH - 1), OK),
    "an older epoch": (S, replace(R, epoch=4), StaleEpochError),
    "an epoch never promised": (S, replace(R, epoch=6), UnpromisedEpochError),
    "a repeated serial": (S, replace(R, ipc_serial=3), IpcSerialError),
    "an older serial": (S, replace(R, ipc_serial=1), IpcSerialError),
    "the first serial after a promise": (replace(S, ipc_serial=-1), replace(R, ipc_serial=0), OK),
    "a committed txid moving back": (
        S,
        replace(R, committed_txid=14),
        CommittedTxidRegressionError,
    ),
    "any committed txid on a node that knows none": (
        replace(S, committed_txid=None),
        replace(R, committed_txid=1),
        OK,
    ),
}


@pytest.mark.parametrize(("state", "req", "expected"), cases(REQUESTS))
def test_check_request(state: JournalState, req: Request, expected: object) -> None:
    outcome(expected, lambda: rules.check_request(state, req))


AWAITING = replace(S, awaiting_new_epoch="was formatted")
WRITER_CALLS: dict[str, tuple[JournalState, Request, object]] = {
    "a writer call": (S, R, OK),
    "awaiting a new epoch refuses the promised writer": (AWAITING, R, AwaitingNewEpochError),
    "awaiting a new epoch refuses before the epoch check": (
        AWAITING,
        replace(R, epoch=4),
        AwaitingNewEpochError,
    ),
    "no epoch while awaiting is a missing epoch": (
        AWAITING,
        replace(R, epoch=0),
        MissingEpochError,
    ),
    "then the request checks": (S, replace(R, epoch=4), StaleEpochError),
}


@pytest.mark.parametrize(("state", "req", "expected"), cases(WRITER_CALLS))
def test_check_writer_call(state: JournalState, req: Request, expected: object) -> None:
    outcome(expected, lambda: rules.check_writer_call(state, req))


WRITER_EPOCHS: dict[str, tuple[JournalState, object]] = {
    "the writer's epoch": (S, OK),
    "promised but no segment started in it": (replace(S, last_writer_epoch=4), NotWriterEpochError),
}


@pytest.mark.parametrize(("state", "expected"), cases(WRITER_EPOCHS))
def test_check_writer_epoch(state: JournalState, expected: object) -> None:
    outcome(expected, lambda: rules.check_writer_epoch(state, R))


# committed_txid_to_record(state, request, txids written by the same request)
COMMITTED: dict[str, tuple[JournalState, Request, int | None, int | None]] = {
    "no claim": (S, replace(R, committed_txid=None), None, None),
    "the same claim": (S, R, None, None),
    "a claim within what is written": (S, replace(R, committed_txid=18), None, 18),
    "a claim up to what is written": (S, replace(R, committed_txid=20), None, 20),
    "the writer's claim above what is here is cut to it": (
        S,
        replace(R, committed_txid=30),
        None,
        20,
    ),
    "the same request's batch counts as written": (S, replace(R, committed_txid=30), 25, 25),
    "the batch's claim within it": (S, replace(R, committed_txid=22), 25, 22),
    "another writer's claim above what is here is not stored": (
        replace(S, last_writer_epoch=4),
        replace(R, committed_txid=30),
        None,
        None,
    ),
    "another writer's claim within what is here is stored": (
        replace(S, last_writer_epoch=4),
        replace(R, committed_txid=18),
        None,
        18,
    ),
    "a cut that would not advance is not stored": (
        replace(S, committed_txid=20),
        replace(R, committed_txid=30),
        None,
        None,
    ),
    "a first claim on an empty node is not stored": (
        replace(S, committed_txid=None, highest_written_txid=0),
        replace(R, committed_txid=5),
        None,
        None,
    ),
}


@pytest.mark.parametrize(("state", "req", "written", "expected"), cases(COMMITTED))
def test_committed_txid_to_record(
    state: JournalState, req: Request, written: int | None, expected: int | None
) -> None:
    assert rules.committed_txid_to_record(state, req, written) == expected


# -- the promise -------------------------------------------------------------------------------

NEW_EPOCHS: dict[str, tuple[int, int, object]] = {
    "one above the promise": (5, 6, OK),
    "the promise itself": (5, 5, EpochNotNewerError),
    "below the promise": (5, 2, EpochNotNewerError),
    "the largest step": (5, 5 + MAX_EPOCH_STEP, OK),
    "past the largest step": (5, 6 + MAX_EPOCH_STEP, EpochLimitError),
    "the last epoch": (MAX_EPOCH - 2, MAX_EPOCH - 1, OK),
    "the epochs' bound": (MAX_EPOCH - 2, MAX_EPOCH, EpochLimitError),
}


@pytest.mark.parametrize(("promised", "epoch", "expected"), cases(NEW_EPOCHS))
def test_check_new_epoch(promised: int, epoch: int, expected: object) -> None:
    state = replace(S, last_promised_epoch=promised)
    outcome(expected, lambda: rules.check_new_epoch(state, epoch))


A, B, C, D = "h:1", "h:2", "h:3", "h:4"
CHANGE = MemberChangeRecord(7, (A, B, C), (A, B, D))
MEMBERS: dict[str, tuple[list[str], list[str] | None, MemberChangeRecord | None, object]] = {
    "an old writer names none": ([], [A, B, C], None, OK),
    "old storage holds none": ([A, B, C], None, None, OK),
    "the same set in another order": ([C, A, B], [A, B, C], None, OK),
    "another set": ([A, B, D], [A, B, C], None, MembershipMismatchError),
    "the set before the change": ([A, B, C], [A, B, D], CHANGE, MembershipMismatchError),
    "the set after the change": ([D, B, A], [A, B, D], CHANGE, OK),
}


@pytest.mark.parametrize(("named", "held", "change", "expected"), cases(MEMBERS))
def test_check_members(
    named: list[str], held: list[str] | None, change: MemberChangeRecord | None, expected: object
) -> None:
    outcome(expected, lambda: rules.check_members("j", named, held, change))


def test_the_old_set_is_told_the_new_uri() -> None:
    with pytest.raises(MembershipMismatchError, match=r"qjournal://h:1;h:2;h:4/j"):
        rules.check_members("j", [A, B, C], [A, B, D], CHANGE)


ADDRESSES: dict[str, tuple[list[str], object]] = {
    "host:port each": (["h:1", "10.0.0.1:8485", "[::1]:8485"], OK),
    "none": ([], OK),
    "no port": (["h"], InvalidRequestError),
    "no host": ([":8485"], InvalidRequestError),
    "a port that is not a number": (["h:x"], InvalidRequestError),
    "two in one": (["h:1;h:2"], Raises(InvalidRequestError, r"new member 'h:1;h:2' is not host")),
    "a space inside": (["h :1"], InvalidRequestError),
    "a path": (["h/x:1"], InvalidRequestError),
    "a comma": (["h,g:1"], InvalidRequestError),
}


@pytest.mark.parametrize(("members", "expected"), cases(ADDRESSES))
def test_check_member_addresses(members: list[str], expected: object) -> None:
    outcome(expected, lambda: rules.check_member_addresses(members, "new"))


# member_change_step(state, held, recorded, change, joining) for SWAP (CHANGE's sets), on a
# node promised to epoch 9 whose writer is epoch 8 (it started a segment after epoch 7's change).
SWAP = check_member_change([A, B, C], [A, B, D])
ST = replace(S, last_promised_epoch=9, last_writer_epoch=8)
BEFORE_WRITER = replace(ST, last_writer_epoch=7)  # no segment since epoch 7's change
OLD, NEW = [A, B, C], [A, B, D]
OTHER = MemberChangeRecord(3, (A, B), (A, B, C))  # an earlier change
RECORD = MemberChangeStep(9, record=MemberChangeRecord(9, (A, B, C), (A, B, D)))
DONE = MemberChangeStep(7, already_changed=True)
Held = list[str] | None
STEPS: dict[str, tuple[JournalState, Held, MemberChangeRecord | None, bool, object]] = {
    "a first change, recorded in the promise": (ST, OLD, None, False, RECORD),
    "a joining node is marked": (ST, OLD, None, True, replace(RECORD, mark_joined=True)),
    "storage without a member list": (ST, None, None, False, RECORD),
    "a rerun cut short after its record": (
        ST,
        OLD,
        CHANGE,
        True,
        MemberChangeStep(7, mark_joined=True),
    ),
    "the next change once a writer started a segment since": (ST, OLD, OTHER, False, RECORD),
    "the next change before any writer started a segment": (
        replace(ST, last_writer_epoch=3),
        OLD,
        OTHER,
        False,
        Raises(
            MemberChangePendingError,
            r"recorded in epoch 3 \(from \['h:1', 'h:2'\] to \['h:1', 'h:2', 'h:3'\]\)",
        ),
    ),
    "members that are neither set": (ST, [A, C, D], None, False, MembershipMismatchError),
    "a rerun on a node that changed already": (ST, NEW, CHANGE, False, DONE),
    "a rerun on a node without the record": (ST, NEW, None, True, replace(DONE, epoch=0)),
    "a copy of a staying node, joining, before a writer's segment": (
        BEFORE_WRITER,
        NEW,
        CHANGE,
        True,
        replace(DONE, mark_joined=True),
    ),
    "a copy of a staying node, joining, after a writer's segment": (ST, NEW, CHANGE, True, DONE),
    "a joining node already amnesiac": (
        replace(BEFORE_WRITER, amnesiac="joined"),
        NEW,
        CHANGE,
        True,
        DONE,
    ),
}


@pytest.mark.parametrize(("state", "held", "recorded", "joining", "expected"), cases(STEPS))
def test_member_change_step(
    state: JournalState,
    held: list[str] | None,
    recorded: MemberChangeRecord | None,
    joining: bool,
    expected: object,
) -> None:
    outcome(expected, lambda: rules.member_change_step(state, held, recorded, SWAP, joining))


@pytest.mark.parametrize(("joining", "expected"), [(True, OK), (False, JournalNotFormattedError)])
def test_check_join_without_storage(joining: bool, expected: object) -> None:
    unformatted = replace(S, formatted=False)
    outcome(expected, lambda: rules.check_join_without_storage(unformatted, SWAP, joining))


# -- format ------------------------------------------------------------------------------------

NS_MINE = NamespaceInfo(1, "CID-mine")
NS_OTHER = NamespaceInfo(2, "CID-other")
QUIET = FORMAT_QUIET_SECONDS
OPEN = replace(S, open_segment=16)
# check_format_in_use(state, mine, ns, force, idle_seconds)
FORMATS: dict[
    str, tuple[JournalState, NamespaceInfo | None, NamespaceInfo, bool, float | None, object]
] = {
    "unformatted": (OPEN, None, NS_OTHER, False, 0.0, OK),
    "idle, never used since the format": (S, NS_MINE, NS_OTHER, False, None, OK),
    "idle for the quiet time": (S, NS_MINE, NS_OTHER, False, QUIET, OK),
    "used just now": (S, NS_MINE, NS_OTHER, True, QUIET - 0.5, JournalInUseError),
    "used just now, not forced": (S, NS_MINE, NS_MINE, False, 1.0, JournalInUseError),
    "used just now, forced for its own namespace": (
        S,
        NS_MINE,
        NS_MINE,
        True,
        1.0,
        "it promised epoch 5 or took a writer call 1s ago",
    ),
    "an open segment, long idle": (OPEN, NS_MINE, NS_OTHER, True, 3600.0, JournalInUseError),
    "an open segment, not forced": (
        OPEN,
        NS_MINE,
        NS_OTHER,
        False,
        None,
        Raises(
            JournalInUseError,
            r"journal 'j' is in use: segment 16 is open .*CID-mine.*this request has "
            r"namespaceID=2.*without force.*idle for 10s",
        ),
    ),
    "an open segment, forced for its own namespace": (
        OPEN,
        NS_MINE,
        NS_MINE,
        True,
        3600.0,
        "segment 16 is open for the writer of epoch 5",
    ),
}


@pytest.mark.parametrize(("state", "mine", "ns", "force", "idle", "expected"), cases(FORMATS))
def test_check_format_in_use(
    state: JournalState,
    mine: NamespaceInfo | None,
    ns: NamespaceInfo,
    force: bool,
    idle: float | None,
    expected: object,
) -> None:
    outcome(expected, lambda: rules.check_format_in_use(state, mine, ns, force, idle))


# -- segments ----------------------------------------------------------------------------------

LAYOUT = -64
OLDEST = -64
LAYOUTS: dict[str, tuple[int, int, object]] = {
    "0 means the default": (21, 0, LAYOUT),
    "the oldest supported": (21, OLDEST, OLDEST),
    "a newer one": (21, OLDEST - 2, OLDEST - 2),
    "an older one": (21, OLDEST + 1, InvalidRequestError),
    "a start txid of 0": (0, 0, InvalidRequestError),
    "a negative start txid": (-3, 0, InvalidRequestError),
}


@pytest.mark.parametrize(("txid", "layout", "expected"), cases(LAYOUTS))
def test_start_layout_version(txid: int, layout: int, expected: object) -> None:
    outcome(expected, lambda: rules.start_layout_version(txid, layout, LAYOUT, OLDEST))


# check_segment_start(state, request, txid, restart)
STARTS: dict[str, tuple[JournalState, Request, int, bool, object]] = {
    "right after the highest written and committed": (
        replace(S, committed_txid=20),
        replace(R, committed_txid=20),
        21,
        False,
        OK,
    ),
    "at the committed txid": (S, R, 15, False, SegmentStartError),
    "at the highest written txid": (S, replace(R, committed_txid=20), 20, False, SegmentStartError),
    "a restart of the newest one-txn segment": (S, replace(R, committed_txid=19), 20, True, OK),
    "a restart below the highest written": (
        S,
        replace(R, committed_txid=19),
        19,
        True,
        SegmentStartError,
    ),
    "past the writer's committed": (S, replace(R, committed_txid=20), 22, False, SegmentStartError),
    "a node that missed txids takes the writer's next segment": (
        S,
        replace(R, committed_txid=40),
        41,
        False,
        OK,
    ),
    "no committed txid reported": (S, replace(R, committed_txid=None), 30, False, OK),
    "a node that knows no committed txid": (
        replace(S, committed_txid=None, highest_written_txid=0),
        replace(R, committed_txid=None),
        1,
        False,
        OK,
    ),
}


@pytest.mark.parametrize(("state", "req", "txid", "restart", "expected"), cases(STARTS))
def test_check_segment_start(
    state: JournalState, req: Request, txid: int, restart: bool, expected: object
) -> None:
    outcome(expected, lambda: rules.check_segment_start(state, req, txid, restart))


OPEN = replace(S, open_segment=16)
# check_batch(state, next txid, segment txid, first txid, txns)
BATCHES: dict[str, tuple[JournalState, int, int, int, int, object]] = {
    "the next txid of the open segment": (OPEN, 21, 16, 21, 3, OK),
    "an empty batch": (OPEN, 21, 16, 21, 0, OK),
    "no open segment": (S, 21, 16, 21, 3, NoOpenSegmentError),
    "another segment": (OPEN, 21, 11, 21, 3, WrongSegmentError),
    "a gap": (OPEN, 21, 16, 22, 3, TxidGapError),
    "a repeat": (OPEN, 21, 16, 20, 3, TxidGapError),
    "a negative count": (OPEN, 21, 16, 21, -1, InvalidRequestError),
}


@pytest.mark.parametrize(("state", "next_txid", "seg", "first", "n", "expected"), cases(BATCHES))
def test_check_batch(
    state: JournalState, next_txid: int, seg: int, first: int, n: int, expected: object
) -> None:
    outcome(expected, lambda: rules.check_batch(state, next_txid, seg, first, n))


FINALIZE_RANGES: dict[str, tuple[int, int, object]] = {
    "one txn": (16, 16, OK),
    "several": (16, 20, OK),
    "empty (end before start)": (16, 15, EmptyFinalizeError),
}


@pytest.mark.parametrize(("start", "end", "expected"), cases(FINALIZE_RANGES))
def test_check_finalize_range(start: int, end: int, expected: object) -> None:
    outcome(expected, lambda: rules.check_finalize_range(S, start, end))


FINALIZE_ENDS: dict[str, tuple[int, int | None, bool, object]] = {
    "the open segment's last txid": (20, 20, True, OK),
    "past the open segment's last txid": (21, 20, True, FinalizeEndMismatchError),
    "a closed copy's last txid": (20, 20, False, OK),
    "a closed copy that holds fewer": (20, 18, False, FinalizeEndMismatchError),
    "a closed copy that holds none": (20, None, False, FinalizeEndMismatchError),
}


@pytest.mark.parametrize(("end", "last", "open_", "expected"), cases(FINALIZE_ENDS))
def test_check_finalize_end(end: int, last: int | None, open_: bool, expected: object) -> None:
    outcome(expected, lambda: rules.check_finalize_end(16, end, last, open_))


REFINALIZE: dict[str, tuple[int, object]] = {
    "the same end again": (20, OK),
    "another end": (21, FinalizeEndMismatchError),
}


@pytest.mark.parametrize(("end", "expected"), cases(REFINALIZE))
def test_check_refinalize(end: int, expected: object) -> None:
    outcome(expected, lambda: rules.check_refinalize("edits_16-20", 20, end))


# check_may_finalize(state, request, start 16, end, accepted, the current writer's segment)
MAY_FINALIZE: dict[str, tuple[Request, int, Accepted | None, bool, object]] = {
    "the writer's own segment, reported committed": (
        replace(R, committed_txid=20),
        20,
        None,
        True,
        OK,
    ),
    "reported committed past the end": (replace(R, committed_txid=25), 20, None, True, OK),
    "not reported committed to its end": (R, 20, None, True, FinalizeRefusedError),
    "no committed txid reported": (
        replace(R, committed_txid=None),
        20,
        None,
        True,
        FinalizeRefusedError,
    ),
    "not the current writer's segment": (
        replace(R, committed_txid=20),
        20,
        None,
        False,
        FinalizeRefusedError,
    ),
    "accepted in this epoch at this end": (R, 20, Accepted(20, 5), False, OK),
    "accepted in this epoch at another end": (R, 20, Accepted(19, 5), False, FinalizeRefusedError),
    "accepted in an older epoch": (R, 20, Accepted(20, 4), False, FinalizeRefusedError),
    "a writer of another epoch": (
        Request(epoch=6, ipc_serial=1, committed_txid=20),
        20,
        None,
        True,
        FinalizeRefusedError,
    ),
}


@pytest.mark.parametrize(("req", "end", "accepted", "current", "expected"), cases(MAY_FINALIZE))
def test_check_may_finalize(
    req: Request, end: int, accepted: Accepted | None, current: bool, expected: object
) -> None:
    outcome(expected, lambda: rules.check_may_finalize(S, req, 16, end, accepted, current))


PURGES: dict[str, tuple[JournalState, int, object]] = {
    "no open segment": (S, 100, OK),
    "up to the open segment": (OPEN, 16, OK),
    "into the open segment": (OPEN, 17, PurgeRefusedError),
}


@pytest.mark.parametrize(("state", "keep", "expected"), cases(PURGES))
def test_check_purge(state: JournalState, keep: int, expected: object) -> None:
    outcome(expected, lambda: rules.check_purge(state, keep))


# A rollback's caller won epoch 6 and started nothing.
FRESH = replace(S, last_promised_epoch=6, ipc_serial=-1)
DISCARDS: dict[str, tuple[JournalState, Request, int, object]] = {
    "a fresh epoch": (FRESH, Request(6, 0), 11, OK),
    "a txid of 0": (FRESH, Request(6, 0), 0, InvalidRequestError),
    "the writer of the epoch started segments": (
        replace(FRESH, last_writer_epoch=6),
        Request(6, 0),
        11,
        SegmentStateError,
    ),
    "a deposed writer": (FRESH, Request(5, 9), 11, StaleEpochError),
}


@pytest.mark.parametrize(("state", "req", "txid", "expected"), cases(DISCARDS))
def test_check_discard(state: JournalState, req: Request, txid: int, expected: object) -> None:
    outcome(expected, lambda: rules.check_discard(state, req, txid))


def test_a_discard_without_an_epoch_is_refused_once_formatted() -> None:
    assert isinstance(rules.discard_without_epoch(S, 11), MissingEpochError)
    with pytest.raises(JournalNotFormattedError):
        rules.discard_without_epoch(replace(S, formatted=False), 11)


SEGS = [("edits_1-10", 1, 10), ("edits_11-20", 11, 20), ("edits_inprogress_21", 21, 25)]
DISCARDED: dict[str, tuple[int, object]] = {
    "from a segment's start": (11, [1, 2]),
    "from the in-progress one": (21, [2]),
    "past every segment": (26, []),
    "everything": (1, [0, 1, 2]),
    "across a finalized segment": (15, SegmentStateError),
    "across the in-progress one": (22, SegmentStateError),
}


@pytest.mark.parametrize(("txid", "expected"), cases(DISCARDED))
def test_segments_to_discard(txid: int, expected: object) -> None:
    outcome(expected, lambda: rules.segments_to_discard(FRESH, txid, SEGS))


# -- reads -------------------------------------------------------------------------------------

CACHED: dict[str, tuple[JournalState, int, bool]] = {
    "the current writer's txids": (S, 16, True),
    "up to the highest written": (S, 20, True),
    "past the highest written": (S, 21, False),
    "the writer lost the promise": (replace(S, last_promised_epoch=6), 16, False),
    "awaiting a new epoch": (AWAITING, 16, False),
}


@pytest.mark.parametrize(("state", "since", "expected"), cases(CACHED))
def test_serves_cached_edits(state: JournalState, since: int, expected: bool) -> None:
    assert rules.serves_cached_edits(state, since) is expected


FOR_RECOVERY: dict[str, tuple[JournalState, int, bool]] = {
    "the promised epoch": (S, 5, True),
    "an older epoch": (S, 4, False),
    "no epoch": (S, 0, False),
    "awaiting a new epoch": (AWAITING, 5, False),
}


@pytest.mark.parametrize(("state", "epoch", "expected"), cases(FOR_RECOVERY))
def test_serves_for_recovery(state: JournalState, epoch: int, expected: bool) -> None:
    assert rules.serves_for_recovery(state, epoch) is expected


# -- recovery ----------------------------------------------------------------------------------

VOTES: dict[str, tuple[JournalState, object]] = {
    "a node with its data": (S, OK),
    "an amnesiac node": (replace(S, amnesiac="was restored"), AmnesiacNodeError),
}


@pytest.mark.parametrize(("state", "expected"), cases(VOTES))
def test_check_may_vote(state: JournalState, expected: object) -> None:
    outcome(expected, lambda: rules.check_may_vote(state, 16))


ACCEPTED_MATCHES: dict[str, tuple[int | None, object]] = {
    "the copy ends where accepted": (20, OK),
    "the copy ends elsewhere": (19, AcceptedStateMismatchError),
    "no copy": (None, AcceptedStateMismatchError),
}


@pytest.mark.parametrize(("on_disk", "expected"), cases(ACCEPTED_MATCHES))
def test_check_accepted_matches(on_disk: int | None, expected: object) -> None:
    outcome(expected, lambda: rules.check_accepted_matches(S, 16, on_disk, "16-20", 20))


FETCH = AcceptAction(fetch=True)
FETCH_COMPARE = AcceptAction(fetch=True, compare=True)
KEEP = AcceptAction()
# The recovery of epoch 6 chooses 16-20 (in progress unless said otherwise).
R6 = Request(epoch=6, ipc_serial=0)
S6 = replace(S, last_promised_epoch=6, ipc_serial=-1)
MINE_16_20 = OnDisk(16, 20, in_progress=True)
FINAL_16_20 = OnDisk(16, 20, in_progress=False, decided_epoch=4)
# accept_action(state, chosen in progress, chosen decided epoch, accepted epoch, ours, has url)
ACCEPTS: dict[
    str, tuple[JournalState, bool, int | None, int | None, OnDisk | None, bool, object]
] = {
    "nothing here: fetch": (S6, True, None, None, None, True, FETCH),
    "nothing here and no URL": (S6, True, None, None, None, False, InvalidRequestError),
    "a shorter copy here: fetch": (S6, True, None, None, OnDisk(16, 18, True), True, FETCH),
    "a corrupt copy of the same end: fetch": (
        S6,
        True,
        None,
        None,
        OnDisk(16, 20, True, corrupt=True),
        True,
        FETCH,
    ),
    "the same end from another node: fetch and compare": (
        S6,
        True,
        None,
        None,
        MINE_16_20,
        True,
        FETCH_COMPARE,
    ),
    "the source itself keeps its copy": (S6, True, None, None, MINE_16_20, False, KEEP),
    "accepted in a newer epoch": (S6, True, None, 7, None, True, NewerAcceptError),
    "accepted in this epoch before: again": (S6, True, None, 6, MINE_16_20, False, KEEP),
    "a replacement losing the committed txid": (
        replace(S6, committed_txid=22),
        True,
        None,
        None,
        OnDisk(16, 25, True),
        True,
        CommittedTxidLossError,
    ),
    "a replacement keeping the committed txid": (
        replace(S6, committed_txid=18),
        True,
        None,
        None,
        OnDisk(16, 25, True),
        True,
        FETCH,
    ),
    "a finalized copy an older epoch decided, same end: compare": (
        S6,
        False,
        None,
        None,
        FINAL_16_20,
        True,
        FETCH_COMPARE,
    ),
    "a finalized copy the same epoch decided: keep": (S6, False, 4, None, FINAL_16_20, True, KEEP),
    "a finalized copy decided in this epoch, another end": (
        S6,
        True,
        None,
        None,
        OnDisk(16, 22, False, decided_epoch=6),
        True,
        FinalizedReplaceError,
    ),
    "a finalized copy an older epoch decided, another end: fetch": (
        S6,
        True,
        None,
        None,
        OnDisk(16, 22, False, decided_epoch=4),
        True,
        FETCH,
    ),
    "a finalized copy without a decision, the writer epoch is this one": (
        replace(S6, last_writer_epoch=6),
        True,
        None,
        None,
        OnDisk(16, 22, False),
        True,
        FinalizedReplaceError,
    ),
    "a stale epoch": (S, True, None, None, None, True, UnpromisedEpochError),
}


@pytest.mark.parametrize(
    ("state", "in_progress", "chosen_decided", "accepted", "ours", "url", "expected"),
    cases(ACCEPTS),
)
def test_accept_action(
    state: JournalState,
    in_progress: bool,
    chosen_decided: int | None,
    accepted: int | None,
    ours: OnDisk | None,
    url: bool,
    expected: object,
) -> None:
    outcome(
        expected,
        lambda: rules.accept_action(
            state, R6, 16, 20, in_progress, chosen_decided, accepted, ours, url
        ),
    )


BAD_RANGES: dict[str, tuple[int, int]] = {
    "end before start": (16, 15),
    "end 0": (0, 0),
}


@pytest.mark.parametrize(("start", "end"), cases(BAD_RANGES))
def test_accept_action_refuses_a_bad_range(start: int, end: int) -> None:
    with pytest.raises(InvalidRequestError, match="bad recovery state"):
        rules.accept_action(S6, R6, start, end, True, None, None, None, True)


def test_request_of_a_wire_header() -> None:
    req = pb.RequestInfoProto(epoch=3, ipc_serial=9)
    assert Request.of(req) == Request(3, 9, None)
    req.committed_txid = 12
    assert Request.of(req) == Request(3, 9, 12)
