"""Acceptor rules (design §J) on in-process Journal objects: visibility, fencing, limits."""

from __future__ import annotations

import os
import re
import struct
import time
from pathlib import Path

import pytest

from conftest import snapshot
from qjm.editlog.file_names import finalized_name, inprogress_name
from qjm.journalnode import journal as journal_module
from qjm.journalnode import rules
from qjm.journalnode.accept_recovery import accept_recovery
from qjm.journalnode.journal import Journal
from qjm.journalnode.journal_status import status_of
from qjm.journalnode.syncer import PeerCopy, SyncPlan, occupied_ranges, plan_sync
from qjm.protocol import qjournal_pb2 as pb
from qjm.protocol.errors import (
    AmnesiacNodeError,
    AwaitingNewEpochError,
    EmptyFinalizeError,
    EpochLimitError,
    EpochNotNewerError,
    FinalizeRefusedError,
    InvalidRequestError,
    IpcSerialLimitError,
    JournalInUseError,
    MembershipMismatchError,
    MissingEpochError,
    NamespaceMismatchError,
    SegmentExistsError,
    SegmentStartError,
    SegmentStateError,
    StaleEpochError,
    StorageError,
    UnpromisedEpochError,
)
from qjm.protocol.identity import check_journal_id
from qjm.protocol.namespace import NamespaceInfo
from test_journal import NS, Writer, open_journal, write

NS_B = NamespaceInfo(999, "CID-other")
MEMBERS = ["127.0.0.1:8485", "127.0.0.1:8486", "127.0.0.1:8487"]


def writer_with(j: Journal, epoch: int, seg: int, first: int, n: int) -> Writer:
    """Win epoch, open segment seg and write n txns from first."""
    j.new_epoch(NS, epoch)
    w = Writer(epoch)
    j.start_log_segment(w.req(), seg, -64)
    write(j, w, seg, first, n)
    return w


def listed(j: Journal) -> list[tuple[int, int, bool]]:
    """The manifest with in-progress segments, as tuples."""
    return [(s.start_txid, s.end_txid, s.is_in_progress) for s in j.get_edit_log_manifest(1, True)]


# -- A1: in-progress edits of an older writer are never advertised or served ---------------


def test_older_writers_inprogress_segment_is_neither_listed_nor_served(journal: Journal) -> None:
    w1 = writer_with(journal, 1, 1, 1, 5)
    w1.committed = 5
    journal.finalize_log_segment(w1.req(committed=5), 1, 5)
    journal.start_log_segment(w1.req(), 6, -64)
    write(journal, w1, 6, 6, 15)  # 6-20 reached only this node
    assert listed(journal)[-1] == (6, 20, True)
    # writer 2 recovered elsewhere (ending at 5) and rejoins this node: it refuses the start
    journal.new_epoch(NS, 2)
    w2 = Writer(2)
    with pytest.raises(SegmentExistsError, match="holds valid transactions up to 20"):
        journal.start_log_segment(w2.req(), 6, -64)
    w2.committed = 10  # learned from heartbeats: must not make writer 1's 6-10 visible
    journal.heartbeat(w2.req())
    assert listed(journal) == [(1, 5, False)]
    assert journal.segment_path(6, True) is None
    resp = journal.get_journaled_edits(6, 100)
    assert resp.txn_count == 0 and resp.edit_log == b""
    assert (resp.last_writer_epoch, resp.last_promised_epoch) == (1, 2)
    # a recovery of the current promise may still fetch it (the source of accept_recovery)
    found = journal.segment_path(6, True, recovery_epoch=2)
    assert found is not None and found[0].name == inprogress_name(6)
    assert journal.segment_path(6, True, recovery_epoch=1) is None


def test_cache_and_listing_follow_the_current_writer(journal: Journal) -> None:
    w1 = writer_with(journal, 1, 1, 1, 3)
    resp = journal.get_journaled_edits(1, 10)
    assert resp.txn_count == 3 and (resp.last_writer_epoch, resp.last_promised_epoch) == (1, 1)
    journal.new_epoch(NS, 2)
    assert journal.cache.range() is None  # cleared when the promise rose
    assert listed(journal) == []
    # recovery in epoch 2 accepts the segment: still not visible until writer 2 starts one
    prep = journal.prepare_recovery(Writer(2).req(), 1)
    w2 = Writer(2)
    w2.serial = 10
    accept_recovery(journal, w2.req(), prep.segment_state, "")
    assert listed(journal) == []
    journal.finalize_log_segment(w2.req(committed=3), 1, 3)
    journal.start_log_segment(w2.req(), 4, -64)
    write(journal, w2, 4, 4, 2)
    assert listed(journal) == [(1, 3, False), (4, 5, True)]
    assert journal.get_journaled_edits(4, 10).txn_count == 2
    del w1


# -- A2: finalize only what the current writer wrote or a recovery accepted now --------------


def test_finalize_of_a_segment_the_writer_did_not_write_is_refused(journal: Journal) -> None:
    writer_with(journal, 1, 1, 1, 5)
    journal.new_epoch(NS, 2)
    w2 = Writer(2)
    before = snapshot(journal.storage.current)
    with pytest.raises(FinalizeRefusedError, match="neither written by the writer of epoch 2"):
        journal.finalize_log_segment(w2.req(committed=5), 1, 5)
    assert snapshot(journal.storage.current) == before
    prep = journal.prepare_recovery(w2.req(), 1)
    accept_recovery(journal, w2.req(), prep.segment_state, "")
    journal.finalize_log_segment(w2.req(committed=5), 1, 5)
    assert (journal.storage.current / finalized_name(1, 5)).exists()


def test_writer_finalizes_its_own_segment_after_a_node_restart(tmp_path: Path) -> None:
    j = open_journal(tmp_path)
    j.format(NS, force=False)
    w = writer_with(j, 1, 1, 1, 3)
    j.close()
    j = open_journal(tmp_path)
    try:
        j.finalize_log_segment(w.req(committed=3), 1, 3)
        assert (j.storage.current / finalized_name(1, 3)).exists()
    finally:
        j.close()


# -- A5: format never lets epochs go back; old writers wait for a new_epoch ----------------


def test_format_force_with_another_namespace_refuses_the_old_writer(journal: Journal) -> None:
    w = writer_with(journal, 3, 1, 1, 3)
    journal.finalize_log_segment(w.req(committed=3), 1, 3)
    idle_for(journal, 60)  # a journal in use is formatted for its own namespace only
    journal.format(NS_B, force=True)
    assert journal.last_promised_epoch == 3  # kept: epochs never go back
    with pytest.raises(AwaitingNewEpochError, match="awaits a new writer's new_epoch"):
        journal.start_log_segment(w.req(), 4, -64)
    with pytest.raises(AwaitingNewEpochError, match="was formatted for namespaceID=999"):
        write(journal, w, 1, 4, 1)
    with pytest.raises(AwaitingNewEpochError, match="awaits a new writer's new_epoch"):
        journal.heartbeat(w.req())
    with pytest.raises(NamespaceMismatchError, match="namespaceID=12345"):
        journal.new_epoch(NS, 4)
    journal.new_epoch(NS_B, 4)
    w4 = Writer(4)
    journal.start_log_segment(w4.req(), 1, -64)
    write(journal, w4, 1, 1, 1)


def idle_for(j: Journal, seconds: float) -> None:
    """Make j's clock run as if seconds had passed since now."""
    offset = j.clock() - time.monotonic() + seconds
    j.clock = lambda: time.monotonic() + offset


def test_format_of_a_journal_with_an_open_segment_needs_force_and_its_namespace(
    journal: Journal,
) -> None:
    writer_with(journal, 1, 1, 1, 3)
    idle_for(journal, 3600)  # long quiet: the open segment alone is enough to refuse
    before = snapshot(journal.storage.current)
    for ns, force in ((NS_B, True), (NS_B, False), (NS, False)):
        with pytest.raises(
            JournalInUseError,
            match=r"journal 'test' is in use: segment 1 is open for the writer of epoch 1.*"
            r"force.*namespaceID=12345, clusterID=CID-test",
        ):
            journal.format(ns, force=force)
    assert snapshot(journal.storage.current) == before
    assert journal.cur_segment_txid == 1
    journal.format(NS, force=True)  # the operator names the journal's own namespace
    assert journal.storage.segments() == [] and journal.awaiting_new_epoch is not None


def test_format_soon_after_a_promise_or_a_writer_call_is_refused(journal: Journal) -> None:
    quiet = rules.FORMAT_QUIET_SECONDS
    assert 1 <= quiet <= 60
    journal.new_epoch(NS, 1)
    with pytest.raises(JournalInUseError, match=r"promised epoch 1 or took a writer call 0s ago"):
        journal.format(NS_B, force=True)
    idle_for(journal, quiet + 1)
    journal.heartbeat(Writer(1).req())  # an accepted writer call counts as use
    with pytest.raises(JournalInUseError, match=r"in use: .* ago.*idle for"):
        journal.format(NS_B, force=True)
    idle_for(journal, quiet - 1)
    with pytest.raises(JournalInUseError):
        journal.format(NS_B, force=True)
    idle_for(journal, 1.5)
    journal.format(NS_B, force=True)  # idle: as before, force wipes it
    assert journal.ns_info == NS_B


def test_format_after_a_restart_counts_use_from_the_files_times(tmp_path: Path) -> None:
    j = open_journal(tmp_path)
    j.format(NS, force=False)
    writer_with(j, 2, 1, 1, 3)
    j.close()
    current = tmp_path / "test" / "current"
    old = time.time() - 3600
    os.utime(current / "last-promised-epoch", (old, old))
    j = open_journal(tmp_path)  # no segment open after the restart, but one was just written
    try:
        with pytest.raises(JournalInUseError, match="took a writer call"):
            j.format(NS_B, force=True)
    finally:
        j.close()
    for f in current.iterdir():
        os.utime(f, (old, old))
    j = open_journal(tmp_path)
    try:
        j.format(NS_B, force=True)
        assert j.ns_info == NS_B
    finally:
        j.close()


def test_format_keeps_the_promise_of_a_journal_that_lost_its_version(tmp_path: Path) -> None:
    j = open_journal(tmp_path)
    j.format(NS, force=False)
    writer_with(j, 7, 1, 1, 2)
    j.close()
    (tmp_path / "test" / "current" / "VERSION").unlink()
    j = open_journal(tmp_path)
    try:
        assert not j.is_formatted()
        j.format(NS_B, force=True)
        assert j.last_promised_epoch == 7
        with pytest.raises(EpochNotNewerError, match="proposed epoch 7 <= last promise 7"):
            j.new_epoch(NS_B, 7)
    finally:
        j.close()


def test_every_writer_call_waits_for_new_epoch_after_format(tmp_path: Path) -> None:
    j = open_journal(tmp_path)
    try:
        j.format(NS, force=False)
        w = Writer(1)
        calls = {
            "start_log_segment": lambda: j.start_log_segment(w.req(), 1, -64),
            "journal": lambda: write(j, w, 1, 1, 1),
            "heartbeat": lambda: j.heartbeat(w.req()),
            "finalize": lambda: j.finalize_log_segment(w.req(committed=1), 1, 1),
            "purge": lambda: j.purge_logs_older_than(w.req(), 1),
            "prepare_recovery": lambda: j.prepare_recovery(w.req(), 1),
            "accept_recovery": lambda: accept_recovery(
                j, w.req(), pb.SegmentStateProto(start_txid=1, end_txid=1), "http://x"
            ),
        }
        for name, call in calls.items():
            with pytest.raises(AwaitingNewEpochError, match="awaits a new writer's new_epoch"):
                call()
            assert j.last_promised_epoch == 0, name
        j.close()
        j = open_journal(tmp_path)  # the marker is persisted
        with pytest.raises(AwaitingNewEpochError, match="awaits a new writer's new_epoch"):
            j.heartbeat(Writer(1).req())
        j.new_epoch(NS, 1)
        j.heartbeat(Writer(1).req())
    finally:
        j.close()


def test_restored_version_waits_for_a_new_epoch(tmp_path: Path) -> None:
    j = open_journal(tmp_path)
    j.format(NS, force=False)
    w = writer_with(j, 2, 1, 1, 3)
    j.close()
    (tmp_path / "test" / "current" / "VERSION").unlink()
    j = open_journal(tmp_path)
    try:
        assert j.restore_version(NS, 2)
        with pytest.raises(AwaitingNewEpochError, match="awaits a new writer's new_epoch"):
            j.heartbeat(w.req())
        with pytest.raises(AwaitingNewEpochError, match="awaits a new writer's new_epoch"):
            j.prepare_recovery(w.req(), 1)
        assert listed(j) == [] and j.segment_path(1, True) is None
        j.new_epoch(NS, 3)
        # Restored storage is an amnesiac acceptor: no recovery vote after new_epoch either
        # (until a writer starts a segment here; see test_recovery_amnesia.py).
        with pytest.raises(AmnesiacNodeError, match="restored from a peer.*prepare_recovery"):
            j.prepare_recovery(Writer(3).req(), 1)
    finally:
        j.close()


def test_a_wiped_journal_restored_from_a_peer_waits_for_a_new_epoch(tmp_path: Path) -> None:
    j = open_journal(tmp_path)
    try:
        assert j.restore_version(NS, 4)  # nothing on disk: the syncer re-creates it
        assert j.last_promised_epoch == 4
        with pytest.raises(AwaitingNewEpochError, match="restored from a peer.*awaits"):
            j.heartbeat(Writer(4).req())
        j.new_epoch(NS, 5)
        assert j.storage.awaiting_new_epoch() is None
    finally:
        j.close()


# -- A6: an empty segment is never finalized ---------------------------------------------


def test_finalize_with_end_before_start_is_refused(journal: Journal) -> None:
    w = writer_with(journal, 1, 1, 1, 5)
    journal.finalize_log_segment(w.req(committed=5), 1, 5)
    journal.start_log_segment(w.req(), 6, -64)
    with pytest.raises(EmptyFinalizeError, match="end 5 is before its start 6"):
        journal.finalize_log_segment(w.req(committed=5), 6, 5)
    assert not (journal.storage.current / finalized_name(6, 5)).exists()
    assert (journal.storage.current / inprogress_name(6)).exists()


# -- A8: membership from format is checked by new_epoch --------------------------------------


def test_new_epoch_refuses_a_writer_naming_other_members(tmp_path: Path) -> None:
    j = open_journal(tmp_path)
    try:
        j.format(NS, force=False, members=list(reversed(MEMBERS)))
        assert (j.storage.current / "members").read_text().split() == MEMBERS
        with pytest.raises(MembershipMismatchError, match=r"names \['127.0.0.1:8485'\] but"):
            j.new_epoch(NS, 1, members=MEMBERS[:1])
        assert j.last_promised_epoch == 0
        j.new_epoch(NS, 1, members=[MEMBERS[2], MEMBERS[0], MEMBERS[1]])
        j.new_epoch(NS, 2)  # no list in the request: no check
        assert list(status_of(j).members) == MEMBERS
        j.close()
        j = open_journal(tmp_path)
        with pytest.raises(MembershipMismatchError, match="was formatted for"):
            j.new_epoch(NS, 3, members=MEMBERS[:2])
    finally:
        j.close()


# -- B1: epochs that leave no room ---------------------------------------------------------


def test_epochs_that_leave_no_room_are_refused(journal: Journal) -> None:
    step = getattr(journal_module, "MAX_EPOCH_STEP", 1_000_000)
    for epoch in (2**63 - 1, 2**62, step + 1):
        with pytest.raises(EpochLimitError, match="above the limit"):
            journal.new_epoch(NS, epoch)
    assert journal.last_promised_epoch == 0
    journal.new_epoch(NS, step)
    assert getattr(journal_module, "MAX_EPOCH", None) == 2**62
    journal.new_epoch(NS, step + 1)
    writer_with(journal, step + 2, 1, 1, 1)


def test_an_ipc_serial_at_the_epoch_bound_is_refused(journal: Journal) -> None:
    journal.new_epoch(NS, 1)
    w = Writer(1)
    for serial in (2**63, 2**62):
        w.serial = serial - 1
        with pytest.raises(
            IpcSerialLimitError, match=rf"IPC serial {serial} .*at or above the bound 2\*\*62"
        ):
            journal.heartbeat(w.req())
        assert journal.current_epoch_ipc_serial == -1
    w.serial = 2**62 - 2
    journal.heartbeat(w.req())
    assert journal.current_epoch_ipc_serial == 2**62 - 1


@pytest.mark.parametrize(
    ("name", "data", "shown"),
    [
        ("last-promised-epoch", b"%d\n" % 2**70, str(2**70)),
        ("last-promised-epoch", b"%d\n" % 2**62, str(2**62)),
        ("last-writer-epoch", b"-1\n", "-1"),
        ("committed-txid", struct.pack(">q", -7), "-7"),
    ],
    ids=["promise-2**70", "promise-2**62", "writer-epoch-negative", "committed-negative"],
)
def test_stored_numbers_out_of_range_fail_the_load_naming_the_file(
    tmp_path: Path, name: str, data: bytes, shown: str
) -> None:
    j = open_journal(tmp_path)
    j.format(NS, force=False)
    writer_with(j, 1, 1, 1, 1)
    j.close()
    path = tmp_path / "test" / "current" / name
    path.write_bytes(data)
    with pytest.raises(StorageError, match=rf"{re.escape(str(path))} holds {shown}\b"):
        open_journal(tmp_path)


# -- B2: a committed txid above what the node holds is never stored --------------------------


def test_committed_txid_is_never_stored_above_what_was_written(journal: Journal) -> None:
    w = writer_with(journal, 1, 1, 1, 3)
    syncs: list[float] = []
    journal.counters.observe_sync = syncs.append
    w.committed = 2**63 - 1
    journal.heartbeat(w.req())
    assert journal.committed_txid == 3  # the claim proves no more than what is here
    w.committed = 10**9
    write(journal, w, 1, 4, 2)
    assert journal.committed_txid == 5
    assert len(syncs) == 1 and journal.counters.batches_written_while_lagging == 0
    assert journal.storage.read_committed_txid() == 5
    w.committed = 6  # exactly the batch's end
    write(journal, w, 1, 6, 1)
    assert journal.committed_txid == 6
    assert len(syncs) == 2 and journal.counters.batches_written_while_lagging == 0
    # a next writer is not wedged by a claim it never made
    journal.new_epoch(NS, 2)
    w2 = Writer(2)
    prep = journal.prepare_recovery(w2.req(), 1)
    accept_recovery(journal, w2.req(), prep.segment_state, "")
    journal.finalize_log_segment(w2.req(committed=6), 1, 6)


def test_committed_claim_of_another_writer_is_not_recorded_above_what_is_here(
    journal: Journal,
) -> None:
    writer_with(journal, 1, 1, 1, 5)  # writer 1's segment, never recovered
    journal.new_epoch(NS, 2)
    w2 = Writer(2)
    w2.committed = 8
    journal.heartbeat(w2.req())
    assert journal.committed_txid is None
    w2.committed = 4
    journal.heartbeat(w2.req())
    assert journal.committed_txid == 4


# -- B3: start_log_segment never hides or duplicates txids ---------------------------------


def test_start_segment_at_or_below_written_or_committed_or_past_the_writers_is_refused(
    journal: Journal,
) -> None:
    w = writer_with(journal, 1, 1, 1, 5)
    w.committed = 5
    journal.finalize_log_segment(w.req(committed=5), 1, 5)
    before = snapshot(journal.storage.current)
    with pytest.raises(SegmentStartError, match="txid 3 is not above the committed txid 5"):
        journal.start_log_segment(w.req(), 3, -64)
    with pytest.raises(SegmentStartError, match="starts at 6; txids would be skipped"):
        journal.start_log_segment(w.req(), 9, -64)
    assert snapshot(journal.storage.current) == before
    journal.start_log_segment(w.req(), 6, -64)
    write(journal, w, 6, 6, 2)
    with pytest.raises(SegmentStartError, match="txid 7 is not above the highest written txid 7"):
        journal.start_log_segment(w.req(), 7, -64)


def test_a_node_that_missed_txids_takes_the_next_segment_and_wakes_the_syncer(
    journal: Journal,
) -> None:
    gaps: list[int] = []
    journal.on_gap = lambda: gaps.append(journal.highest_written_txid)
    w = writer_with(journal, 1, 1, 1, 2)  # then it missed 3-23, acked and finalized elsewhere
    w.committed = 23
    journal.start_log_segment(w.req(), 24, -64)  # as HDFS: refusing would keep it out for good
    assert gaps == [2]
    assert journal.cur_segment_txid == 24  # the stale open segment 1 was closed
    write(journal, w, 24, 24, 2)
    assert journal.highest_written_txid == 25
    w.committed = 25
    journal.finalize_log_segment(w.req(committed=25), 24, 25)
    journal.start_log_segment(w.req(), 26, -64)
    assert gaps == [2]  # no gap: nothing more to wake the syncer for
    # The syncer may install the finalized 1-23 a majority holds over the superseded
    # in-progress segment 1, but nothing over the open segment 26.
    copies = [PeerCopy(p, 1, 23, 1) for p in ("jn1", "jn2")] + [
        PeerCopy(p, 26, 30, 1) for p in ("jn1", "jn2")
    ]
    plans = plan_sync(copies, occupied_ranges(journal), 30, 3)
    assert plans == [SyncPlan(1, 23, 1, ("jn1", "jn2"))]


def test_start_segment_below_written_is_refused_without_committed(journal: Journal) -> None:
    w = writer_with(journal, 1, 1, 1, 5)  # no committed txid reported yet
    with pytest.raises(SegmentStartError, match="txid 4 is not above the highest written txid 5"):
        journal.start_log_segment(w.req(), 4, -64)


# -- B5: journal ids that collide with storage names -----------------------------------------


@pytest.mark.parametrize("jid", ["in_use.lock", "current", "edits.sync", ".hidden"])
def test_journal_ids_colliding_with_storage_names_are_refused(jid: str) -> None:
    with pytest.raises(InvalidRequestError, match=f"journal id {jid!r}"):
        check_journal_id(jid)
    assert check_journal_id("my.journal-1") == "my.journal-1"


def test_a_finalize_above_missing_txids_wakes_the_syncer(journal: Journal) -> None:
    gaps: list[int] = []
    journal.on_gap = lambda: gaps.append(journal.highest_written_txid)
    w = writer_with(journal, 1, 1, 1, 5)
    w.committed = 5
    journal.finalize_log_segment(w.req(committed=5), 1, 5)
    assert gaps == []  # nothing missing below 6
    w.committed = 10  # 6-10 were acknowledged on the other nodes while this one was away
    journal.start_log_segment(w.req(), 11, -64)
    assert gaps == [5]
    write(journal, w, 11, 11, 2)
    w.committed = 12
    journal.finalize_log_segment(w.req(committed=12), 11, 12)
    assert gaps == [5, 12]  # finalized 1-5 and 11-12 leave 6-10 to fetch


def test_a_start_reaching_a_lagging_node_after_its_first_batches_is_taken(
    journal: Journal,
) -> None:
    w = writer_with(journal, 1, 1, 1, 5)
    w.committed = 5
    journal.finalize_log_segment(w.req(committed=5), 1, 5)
    w.committed = 8  # 6-8 were acknowledged on the others before this start arrived here
    journal.start_log_segment(w.req(), 6, -64)
    assert journal.cur_segment_txid == 6


# -- discardSegments (rolling-upgrade rollback) ------------------------------------------------


def three_segments(journal: Journal) -> Writer:
    """Writer 1's segments 1-3 and 4-6 finalized, 7-8 in progress; its committed txid 6."""
    w = writer_with(journal, 1, 1, 1, 3)
    journal.finalize_log_segment(w.req(committed=3), 1, 3)
    journal.start_log_segment(w.req(), 4, -64)
    write(journal, w, 4, 4, 3)
    journal.finalize_log_segment(w.req(committed=6), 4, 6)
    journal.start_log_segment(w.req(), 7, -64)
    write(journal, w, 7, 7, 2)
    return w


def test_discard_segments_without_the_promised_epoch_is_refused(tmp_path: Path) -> None:
    j = open_journal(tmp_path)
    j.format(NS, force=False)
    three_segments(j)
    j.close()
    j = open_journal(tmp_path)  # restarted: no segment is open
    try:
        j.new_epoch(NS, 2)
        before = snapshot(j.storage.current)
        with pytest.raises(MissingEpochError, match="carries no writer epoch.*new_epoch"):
            j.discard_segments(None, 4)
        with pytest.raises(StaleEpochError, match="epoch 1 is less than the last promised epoch 2"):
            j.discard_segments(Writer(1).req(), 4)
        with pytest.raises(UnpromisedEpochError, match="epoch 3 was never promised"):
            j.discard_segments(Writer(3).req(), 4)
        assert snapshot(j.storage.current) == before
        assert j.committed_txid == 6 and j.highest_written_txid == 8
    finally:
        j.close()


def test_a_deposed_writer_still_promised_on_a_node_cannot_discard_there(tmp_path: Path) -> None:
    # Writer 1's epoch is still this node's promise (it never heard of a successor) and no
    # segment is open after the restart: the epoch alone would let it delete 4-8 here.
    j = open_journal(tmp_path)
    j.format(NS, force=False)
    w = three_segments(j)
    j.close()
    j = open_journal(tmp_path)
    try:
        before = snapshot(j.storage.current)
        with pytest.raises(SegmentStateError, match="has started segments here"):
            j.discard_segments(w.req(), 4)
        assert snapshot(j.storage.current) == before
    finally:
        j.close()


def test_discard_segments_refuses_an_open_writer_and_a_straddle(journal: Journal) -> None:
    w = three_segments(journal)
    before = snapshot(journal.storage.current)
    with pytest.raises(SegmentStateError, match="the writer of epoch 1 has started segments here"):
        journal.discard_segments(w.req(), 7)
    assert snapshot(journal.storage.current) == before
    journal.new_epoch(NS, 2)  # the writer is fenced: its segment closes
    w2 = Writer(2)
    before = snapshot(journal.storage.current)
    with pytest.raises(SegmentStateError, match=r"segment edits_0+4-0+6 holds txids 4-6, across"):
        journal.discard_segments(w2.req(), 5)
    with pytest.raises(InvalidRequestError, match="must be positive"):
        journal.discard_segments(w2.req(), 0)
    assert snapshot(journal.storage.current) == before


def test_discard_segments_deletes_from_the_txid_on_and_lowers_the_committed_txid(
    journal: Journal,
) -> None:
    three_segments(journal)
    journal.new_epoch(NS, 2)
    prep = journal.prepare_recovery(Writer(2).req(), 7)
    w2 = Writer(2)
    w2.serial = 10
    accept_recovery(journal, w2.req(), prep.segment_state, "")
    assert journal.storage.paxos_txids() == [1, 4, 7]  # two decisions and an accept
    assert journal.committed_txid == 6
    # a rollback: the fenced writer's committed txids 4-6 go too, and the committed txid
    # goes back to the txid before the discard
    assert journal.discard_segments(w2.req(), 4) == 2
    names = sorted(p.name for p in journal.storage.current.glob("edits_*"))
    assert names == [finalized_name(1, 3)]
    assert journal.storage.paxos_txids() == [1]  # the kept segment keeps its decision
    assert journal.highest_written_txid == 3
    assert journal.committed_txid == 3 and journal.storage.read_committed_txid() == 3
    assert listed(journal) == [(1, 3, False)]
    assert journal.discard_segments(w2.req(), 4) == 0  # nothing left there: a repeat is harmless
    assert journal.discard_segments(w2.req(), 9) == 0  # never raises the committed txid
    assert journal.committed_txid == 3
    # the next writer continues from txid 4
    w3 = Writer(3)
    journal.new_epoch(NS, 3)
    w3.committed = 3
    journal.start_log_segment(w3.req(), 4, -64)
    write(journal, w3, 4, 4, 1)
