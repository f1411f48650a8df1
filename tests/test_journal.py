"""The acceptor rules of one journal (Journal class on real storage, no network)."""

from __future__ import annotations

import errno
import shutil
from pathlib import Path

import pytest

from conftest import snapshot
from qjm.editlog.errors import SegmentCorruptError, SegmentRangeError
from qjm.editlog.file_names import finalized_name, inprogress_name
from qjm.editlog.framing import HEADER, OP_INVALID, OP_OPAQUE, encode_op, scan
from qjm.editlog.segments import SegmentWriter, scan_file
from qjm.journalnode.accept_recovery import accept_recovery
from qjm.journalnode.journal import FaultInjector, Journal
from qjm.journalnode.journal_status import status_of
from qjm.journalnode.storage import JNStorage
from qjm.journalnode.syncer import install_synced_segment
from qjm.protocol import qjournal_pb2 as pb
from qjm.protocol.errors import (
    CommittedTxidLossError,
    CommittedTxidRegressionError,
    EpochNotNewerError,
    FinalizedReplaceError,
    FinalizeEndMismatchError,
    InvalidRequestError,
    IpcSerialError,
    JournalNotFormattedError,
    MissingEpochError,
    NamespaceMismatchError,
    NoOpenSegmentError,
    NoSuchSegmentError,
    NotWriterEpochError,
    PurgeRefusedError,
    SegmentExistsError,
    StaleEpochError,
    StorageError,
    StorageNotEmptyError,
    TombstonedSegmentError,
    TxidGapError,
    UnpromisedEpochError,
    WrongSegmentError,
)
from qjm.protocol.namespace import NamespaceInfo

NS = NamespaceInfo(12345, "CID-test")
PEER_URL = "http://peer.invalid/getJournal?jid=test&segmentTxId=1&inProgressOk=true"


def txns(first: int, n: int) -> bytes:
    """n ops numbered from first, like QJMTestUtil.createTxnData."""
    return b"".join(encode_op(OP_OPAQUE, t, f"tx {t}".encode()) for t in range(first, first + n))


class Writer:
    """Builds RequestInfos with increasing serials for one epoch."""

    def __init__(self, epoch: int) -> None:
        self.epoch = epoch
        self.serial = 0
        self.committed: int | None = None

    def req(self, epoch: int | None = None, committed: int | None = None) -> pb.RequestInfoProto:
        """The next request of this writer (reporting committed, if given, as committed)."""
        self.serial += 1
        r = pb.RequestInfoProto(
            journal_id=pb.JournalIdProto(identifier="test"),
            epoch=epoch or self.epoch,
            ipc_serial=self.serial,
        )
        if committed is not None:
            self.committed = committed
        if self.committed is not None:
            r.committed_txid = self.committed
        return r


def open_journal(root: Path, **kw: object) -> Journal:
    """A journal on root/test."""
    return Journal("test", JNStorage(root / "test"), **kw)  # type: ignore[arg-type]


def write(j: Journal, w: Writer, seg: int, first: int, n: int) -> None:
    """journal() a batch of n txns."""
    j.journal(w.req(), seg, first, n, txns(first, n))


def current(j: Journal) -> Path:
    """The journal's current/ dir."""
    return j.storage.current


def test_unformatted_journal_refuses_everything(tmp_path: Path) -> None:
    j = open_journal(tmp_path)
    try:
        assert not j.is_formatted()
        with pytest.raises(JournalNotFormattedError, match="not formatted"):
            j.get_journal_state()
        with pytest.raises(JournalNotFormattedError):
            j.new_epoch(NS, 1)
    finally:
        j.close()


def test_epoch_handling(journal: Journal) -> None:
    assert journal.get_journal_state() == 0
    assert journal.new_epoch(NS, 1) is None
    assert journal.get_journal_state() == 1
    journal.new_epoch(NS, 3)
    with pytest.raises(EpochNotNewerError, match="proposed epoch 3 <= last promise 3"):
        journal.new_epoch(NS, 3)
    # The refusal names both epochs (design §J.11).
    with pytest.raises(StaleEpochError, match="epoch 1 is less than the last promised epoch 3"):
        journal.start_log_segment(Writer(1).req(), 1, -64)
    assert journal.last_promised_epoch == 3


def test_request_without_epoch_is_refused(journal: Journal) -> None:
    with pytest.raises(MissingEpochError, match="carries no epoch"):
        journal.heartbeat(
            pb.RequestInfoProto(
                journal_id=pb.JournalIdProto(identifier="test"), epoch=0, ipc_serial=1
            )
        )


def test_higher_epoch_in_a_request_is_refused_until_new_epoch(journal: Journal) -> None:
    # Only new_epoch raises a promise (design §J.1; HDFS raises it from any request).
    journal.new_epoch(NS, 1)
    with pytest.raises(
        UnpromisedEpochError, match="epoch 5 was never promised here .last promise 1"
    ):
        journal.heartbeat(Writer(5).req())
    assert journal.last_promised_epoch == 1
    assert journal.storage.read_long("last-promised-epoch", 0) == 1


def test_ipc_serial_must_increase(journal: Journal) -> None:
    journal.new_epoch(NS, 1)
    w = Writer(1)
    journal.heartbeat(w.req())
    w.serial -= 1
    with pytest.raises(IpcSerialError, match="not higher than the prior serial"):
        journal.heartbeat(w.req())


def test_maintain_committed_txid(journal: Journal) -> None:
    journal.new_epoch(NS, 1)
    w = Writer(1)
    w.committed = 0
    journal.start_log_segment(w.req(), 1, -64)
    assert journal.committed_txid == 0
    write(journal, w, 1, 1, 3)
    w.committed = 3
    journal.heartbeat(w.req())
    assert journal.committed_txid == 3
    w.committed = 2
    with pytest.raises(CommittedTxidRegressionError, match="backward from 3 to 2"):
        journal.heartbeat(w.req())


def test_restart_keeps_epochs_and_committed_txid(tmp_path: Path) -> None:
    j = open_journal(tmp_path)
    j.format(NS, force=False)
    j.new_epoch(NS, 2)
    w = Writer(2)
    j.start_log_segment(w.req(), 1, -64)
    write(j, w, 1, 1, 5)
    w.committed = 5
    j.heartbeat(w.req())
    j.close()
    j = open_journal(tmp_path)
    try:
        assert j.ns_info == NS
        assert (j.last_promised_epoch, j.last_writer_epoch, j.committed_txid) == (2, 2, 5)
        assert j.highest_written_txid == 5
        assert j.new_epoch(NS, 3) == 1  # the unfinalized segment
    finally:
        j.close()


def test_format_resets_cached_values(journal: Journal) -> None:
    journal.new_epoch(NS, 1)
    w = Writer(1)
    journal.start_log_segment(w.req(), 1, -64)
    write(journal, w, 1, 1, 2)
    journal.finalize_log_segment(w.req(committed=2), 1, 2)
    clock = journal.clock
    journal.clock = lambda: clock() + 3600  # idle: a journal in use is not formatted over
    with pytest.raises(StorageNotEmptyError, match="not empty"):
        journal.format(NamespaceInfo(999, "CID-other"), force=False)
    journal.format(NamespaceInfo(999, "CID-other"), force=True)
    # epochs never go back: a live writer of the old namespace must not write here
    assert (journal.last_promised_epoch, journal.last_writer_epoch) == (1, 0)
    assert journal.highest_written_txid == 0
    assert journal.storage.segments() == []
    assert journal.storage.read_version().namespace_id == 999


def test_namespace_verification(journal: Journal) -> None:
    with pytest.raises(NamespaceMismatchError, match="namespaceID=999.*namespaceID=12345"):
        journal.new_epoch(NamespaceInfo(999, "CID-test"), 1)
    with pytest.raises(NamespaceMismatchError, match="clusterID=CID-x"):
        journal.new_epoch(NamespaceInfo(12345, "CID-x"), 1)
    assert journal.last_promised_epoch == 0


def test_journal_locking(tmp_path: Path) -> None:
    j = open_journal(tmp_path)
    assert (tmp_path / "test" / "in_use.lock").exists()
    with pytest.raises(StorageError, match="in use by another process"):
        open_journal(tmp_path)
    j.close()
    open_journal(tmp_path).close()


def test_new_epoch_at_beginning_of_segment(journal: Journal) -> None:
    journal.new_epoch(NS, 1)
    w = Writer(1)
    journal.start_log_segment(w.req(), 1, -64)
    write(journal, w, 1, 1, 2)
    journal.finalize_log_segment(w.req(committed=2), 1, 2)
    journal.start_log_segment(w.req(), 3, -64)
    assert journal.new_epoch(NS, 2) == 1  # the empty segment 3 does not count
    assert not (current(journal) / inprogress_name(3)).exists()
    assert (current(journal) / (inprogress_name(3) + ".empty")).exists()


def test_finalize_when_edits_are_missed(tmp_path: Path) -> None:
    j = open_journal(tmp_path)
    j.format(NS, force=False)
    j.new_epoch(NS, 1)
    w = Writer(1)
    j.start_log_segment(w.req(), 1, -64)
    write(j, w, 1, 1, 3)
    with pytest.raises(FinalizeEndMismatchError, match="only written up to txid 3"):
        j.finalize_log_segment(w.req(committed=6), 1, 6)
    j.close()
    j = open_journal(tmp_path)
    try:
        with pytest.raises(FinalizeEndMismatchError, match="disk only contains up to txid 3"):
            j.finalize_log_segment(Writer(1).req(committed=6), 1, 6)
    finally:
        j.close()


def test_finalize_missing_segment(journal: Journal) -> None:
    journal.new_epoch(NS, 1)
    with pytest.raises(NoSuchSegmentError, match="no log file to finalize at transaction id 1000"):
        journal.finalize_log_segment(Writer(1).req(committed=1001), 1000, 1001)


def test_finalize_is_idempotent_and_checks_the_end(journal: Journal) -> None:
    journal.new_epoch(NS, 1)
    w = Writer(1)
    journal.start_log_segment(w.req(), 1, -64)
    write(journal, w, 1, 1, 3)
    journal.finalize_log_segment(w.req(committed=3), 1, 3)
    journal.finalize_log_segment(w.req(committed=3), 1, 3)
    with pytest.raises(FinalizeEndMismatchError, match="different end txid 4"):
        journal.finalize_log_segment(w.req(committed=4), 1, 4)
    final = current(journal) / finalized_name(1, 3)
    assert final.stat().st_size == len(HEADER) + len(txns(1, 3))  # padding cut
    assert scan_file(final).end == "eof"


def test_abort_old_segment_if_finalize_is_missed(journal: Journal) -> None:
    journal.new_epoch(NS, 1)
    w = Writer(1)
    journal.start_log_segment(w.req(), 1, -64)
    write(journal, w, 1, 1, 5)
    journal.start_log_segment(w.req(), 6, -64)
    write(journal, w, 6, 6, 1)
    assert (current(journal) / inprogress_name(1)).exists()
    assert (current(journal) / inprogress_name(6)).exists()


def test_start_segment_when_already_exists(journal: Journal) -> None:
    journal.new_epoch(NS, 1)
    w = Writer(1)
    journal.start_log_segment(w.req(), 1, -64)
    write(journal, w, 1, 1, 1)
    journal.start_log_segment(w.req(), 1, -64)  # one txn: may restart
    write(journal, w, 1, 1, 2)
    before = snapshot(current(journal))
    with pytest.raises(SegmentExistsError, match="holds valid transactions up to 2"):
        journal.start_log_segment(w.req(), 1, -64)
    assert snapshot(current(journal)) == before
    journal.finalize_log_segment(w.req(committed=2), 1, 2)
    with pytest.raises(SegmentExistsError, match="already have a finalized segment"):
        journal.start_log_segment(w.req(), 1, -64)


def test_empty_in_progress_segment_is_moved_aside_at_restart(tmp_path: Path) -> None:
    j = open_journal(tmp_path)
    j.format(NS, force=False)
    j.new_epoch(NS, 1)
    w = Writer(1)
    j.start_log_segment(w.req(), 1, -64)
    write(j, w, 1, 1, 2)
    j.finalize_log_segment(w.req(committed=2), 1, 2)
    j.start_log_segment(w.req(), 3, -64)
    j.close()
    path = tmp_path / "test" / "current" / inprogress_name(3)
    path.write_bytes(bytes([OP_INVALID]) * 4096)  # only padding, header included
    j = open_journal(tmp_path)
    try:
        assert not path.exists()
        assert path.with_name(path.name + ".empty").exists()
        assert j.highest_written_txid == 2
    finally:
        j.close()


def test_write_rules_change_nothing_on_disk(journal: Journal) -> None:
    journal.new_epoch(NS, 2)
    w = Writer(2)
    journal.start_log_segment(w.req(), 1, -64)
    write(journal, w, 1, 1, 3)
    before = snapshot(journal.storage.root)
    state = (journal.last_promised_epoch, journal.committed_txid, journal.highest_written_txid)
    stale = Writer(1)
    stale.committed = 3
    with pytest.raises(
        StaleEpochError, match="IPC's epoch 1 is less than the last promised epoch 2"
    ):
        journal.journal(stale.req(), 1, 4, 1, txns(4, 1))
    with pytest.raises(TxidGapError, match="can't write txid 6: expecting next txid 4"):
        journal.journal(w.req(), 1, 6, 1, txns(6, 1))
    with pytest.raises(TxidGapError, match="expecting next txid 4"):
        journal.journal(w.req(), 1, 2, 1, txns(2, 1))  # reordering / overwrite
    with pytest.raises(WrongSegmentError, match="writes segment 9"):
        journal.journal(w.req(), 9, 4, 1, txns(4, 1))
    bad = bytearray(txns(4, 2))
    bad[20] ^= 0xFF
    with pytest.raises(InvalidRequestError, match="malformed batch.*txid 4"):
        journal.journal(w.req(), 1, 4, 2, bytes(bad))
    with pytest.raises(InvalidRequestError, match="claims 3 ops but holds 2"):
        journal.journal(w.req(), 1, 4, 3, txns(4, 2))
    with pytest.raises(InvalidRequestError, match="txid 5, expected 4"):
        journal.journal(w.req(), 1, 4, 1, txns(5, 1))
    assert snapshot(journal.storage.root) == before
    assert state == (
        journal.last_promised_epoch,
        journal.committed_txid,
        journal.highest_written_txid,
    )
    write(journal, w, 1, 4, 1)  # the writer carries on unharmed
    assert journal.highest_written_txid == 4


def test_journal_needs_the_writer_epoch(journal: Journal) -> None:
    journal.new_epoch(NS, 1)
    w = Writer(1)
    journal.start_log_segment(w.req(), 1, -64)
    write(journal, w, 1, 1, 1)
    journal.new_epoch(NS, 2)
    with pytest.raises(StaleEpochError, match="epoch 1 is less than the last promised epoch 2"):
        write(journal, w, 1, 2, 1)
    w2 = Writer(2)
    with pytest.raises(NotWriterEpochError, match="not the current writer epoch 1"):
        write(journal, w2, 1, 2, 1)


def test_a_committed_claim_above_the_batch_is_cut_to_it_and_skips_no_sync(
    journal: Journal,
) -> None:
    journal.new_epoch(NS, 1)
    w = Writer(1)
    journal.start_log_segment(w.req(), 1, -64)
    w.committed = 100
    syncs: list[float] = []
    journal.counters.observe_sync = syncs.append
    write(journal, w, 1, 1, 2)
    assert journal.counters.batches_written == 1
    assert journal.counters.batches_written_while_lagging == 0
    assert len(syncs) == 1
    assert journal.committed_txid == 2 and journal.highest_written_txid == 2


def test_disk_full_fails_the_batch_and_keeps_acknowledged_data(
    journal: Journal, monkeypatch: pytest.MonkeyPatch
) -> None:
    journal.new_epoch(NS, 1)
    w = Writer(1)
    journal.start_log_segment(w.req(), 1, -64)
    write(journal, w, 1, 1, 3)

    def full(self: SegmentWriter, records: bytes) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    with monkeypatch.context() as m:
        m.setattr(SegmentWriter, "write", full)
        with pytest.raises(StorageError, match="txids 4-5 .*No space left on device"):
            write(journal, w, 1, 4, 2)
    with pytest.raises(NoOpenSegmentError, match="no segment is open"):
        write(journal, w, 1, 4, 2)
    assert journal.highest_written_txid == 3
    assert scan_file(current(journal) / inprogress_name(1)).last_txid == 3


def test_torn_tail_is_cut_when_finalizing_after_restart(tmp_path: Path) -> None:
    j = open_journal(tmp_path)
    j.format(NS, force=False)
    j.new_epoch(NS, 1)
    w = Writer(1)
    j.start_log_segment(w.req(), 1, -64)
    write(j, w, 1, 1, 5)
    j.close()
    path = tmp_path / "test" / "current" / inprogress_name(1)
    found = scan_file(path)
    with open(path, "r+b") as f:  # a half-written sixth op where the padding was
        f.seek(found.valid_length)
        f.write(txns(6, 1)[:10])
    j = open_journal(tmp_path)
    try:
        assert j.highest_written_txid == 5
        j.finalize_log_segment(Writer(1).req(committed=5), 1, 5)
        final = current(j) / finalized_name(1, 5)
        assert final.read_bytes() == HEADER + txns(1, 5)
    finally:
        j.close()


def test_bit_flip_in_an_open_segment_costs_only_its_recovery_vote(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # Design §J.15: valid ops after a bad one mean damage, not a torn tail; cutting the
    # segment at txid 3 would lose acknowledged txids, so prepare_recovery refuses it. But
    # the journal still opens and promises (design §J.15), and accepting the chosen
    # copy from a peer repairs it. (This test used to expect the open itself to fail.)
    source = tmp_path / "source"
    source.write_bytes(HEADER + txns(1, 6))
    j = open_journal(tmp_path)
    j.format(NS, force=False)
    j.new_epoch(NS, 1)
    w = Writer(1)
    j.start_log_segment(w.req(), 1, -64)
    write(j, w, 1, 1, 6)
    j.close()
    path = tmp_path / "test" / "current" / inprogress_name(1)
    data = bytearray(path.read_bytes())
    off = len(HEADER) + len(txns(1, 3)) + 15  # in the body of txid 4
    data[off] ^= 0x10
    path.write_bytes(bytes(data))
    result = scan(bytes(data))
    assert (result.end, result.last_txid, result.problem_txid) == ("corrupt", 3, 4)
    with caplog.at_level("WARNING", logger="qjm"):
        j = open_journal(tmp_path, fetch=copy_fetch(source))
    try:
        assert f"{inprogress_name(1)} is corrupt at txid 4" in caplog.text
        assert j.highest_written_txid == 3  # what is valid
        assert any(inprogress_name(1) in p and "txid 4" in p for p in status_of(j).problems), (
            status_of(j).problems
        )
        assert j.new_epoch(NS, 2) == 1  # the corrupt segment is still the newest
        w2 = Writer(2)
        with pytest.raises(
            SegmentCorruptError, match=rf"{inprogress_name(1)} is corrupt at txid 4"
        ):
            j.prepare_recovery(w2.req(), 1)
        assert path.read_bytes() == bytes(data)  # nothing was cut or moved
        chosen = pb.SegmentStateProto(start_txid=1, end_txid=6, is_in_progress=True)
        accept_recovery(j, w2.req(), chosen, PEER_URL)
        assert path.read_bytes() == HEADER + txns(1, 6)
        assert j.highest_written_txid == 6
        assert not status_of(j).problems
        j.finalize_log_segment(w2.req(committed=6), 1, 6)
        j.start_log_segment(w2.req(), 7, -64)
        write(j, w2, 7, 7, 2)
        assert j.highest_written_txid == 8
    finally:
        j.close()


def test_a_finalized_copy_supersedes_a_corrupt_open_segment(tmp_path: Path) -> None:
    # The syncer installs the finalized 1-6 a majority holds; the damaged open copy of
    # segment 1 must no longer keep the journal from opening or promising.
    j = open_journal(tmp_path)
    j.format(NS, force=False)
    j.new_epoch(NS, 1)
    w = Writer(1)
    j.start_log_segment(w.req(), 1, -64)
    write(j, w, 1, 1, 6)
    j.close()
    path = tmp_path / "test" / "current" / inprogress_name(1)
    data = bytearray(path.read_bytes())
    data[len(HEADER) + len(txns(1, 3)) + 15] ^= 0x10  # in the body of txid 4
    path.write_bytes(bytes(data))
    (path.parent / finalized_name(1, 6)).write_bytes(HEADER + txns(1, 6))
    j = open_journal(tmp_path)
    try:
        assert j.highest_written_txid == 6
        assert j.new_epoch(NS, 2) == 1
        assert any("in-progress segment 1 is older" in p for p in status_of(j).problems)
    finally:
        j.close()


def test_purge_keeps_what_it_must(journal: Journal) -> None:
    journal.new_epoch(NS, 1)
    w = Writer(1)
    for start in (1, 3, 5):
        journal.start_log_segment(w.req(), start, -64)
        write(journal, w, start, start, 2)
        journal.finalize_log_segment(w.req(committed=start + 1), start, start + 1)
    journal.start_log_segment(w.req(), 7, -64)
    write(journal, w, 7, 7, 1)
    for t in (1, 2, 3, 4):
        seg = pb.SegmentStateProto(start_txid=t, end_txid=t, is_in_progress=True)
        journal.storage.write_paxos(
            t, pb.PersistedRecoveryPaxosData(segment_state=seg, accepted_in_epoch=1)
        )
    with pytest.raises(PurgeRefusedError, match="open segment starts at 7"):
        journal.purge_logs_older_than(w.req(), 8)
    assert journal.purge_logs_older_than(w.req(), 3) == 1
    names = sorted(p.name for p in current(journal).glob("edits_*"))
    assert names == [finalized_name(3, 4), finalized_name(5, 6), inprogress_name(7)]
    # Records below the txid go, but a segment that stays keeps its decision record.
    assert journal.storage.paxos_txids() == [3, 4, 5]
    assert journal.decided_epoch(5, 6) == 1


def test_manifest(journal: Journal) -> None:
    journal.new_epoch(NS, 1)
    w = Writer(1)
    journal.start_log_segment(w.req(), 1, -64)
    write(journal, w, 1, 1, 3)
    journal.finalize_log_segment(w.req(committed=3), 1, 3)
    journal.start_log_segment(w.req(), 4, -64)
    write(journal, w, 4, 4, 2)
    finalized = journal.get_edit_log_manifest(1, False)
    assert [(s.start_txid, s.end_txid, s.is_in_progress) for s in finalized] == [(1, 3, False)]
    every = journal.get_edit_log_manifest(2, True)
    assert [(s.start_txid, s.end_txid, s.is_in_progress) for s in every] == [
        (1, 3, False),
        (4, 5, True),
    ]
    assert [s.start_txid for s in journal.get_edit_log_manifest(4, True)] == [4]


# -- recovery (acceptor side) ---------------------------------------------------------------


def copy_fetch(source: Path) -> object:
    """A fetch function serving one file, standing in for HTTP in these unit tests."""

    def fetch(url: str, dest: Path) -> None:
        shutil.copyfile(source, dest)

    return fetch


def test_accept_recovery_behavior(tmp_path: Path) -> None:
    j = open_journal(tmp_path)
    j.format(NS, force=False)
    try:
        j.new_epoch(NS, 1)
        w = Writer(1)
        assert not j.prepare_recovery(w.req(), 1).HasField("segment_state")
        j.start_log_segment(w.req(), 1, -64)
        write(j, w, 1, 1, 3)
        prep = j.prepare_recovery(w.req(), 1)
        assert prep.segment_state == pb.SegmentStateProto(
            start_txid=1, end_txid=3, is_in_progress=True, byte_length=len(HEADER + txns(1, 3))
        )
        assert prep.last_writer_epoch == 1 and not prep.HasField("accepted_in_epoch")
        accept_recovery(j, w.req(), prep.segment_state, "")  # the source itself: no URL, no fetch
        j.new_epoch(NS, 2)
        w2 = Writer(2)
        prep2 = j.prepare_recovery(w2.req(), 1)
        assert prep2.accepted_in_epoch == 1
        assert prep2.segment_state.end_txid == 3
        with pytest.raises(StaleEpochError, match="epoch 1 is less than the last promised epoch 2"):
            j.prepare_recovery(w.req(), 1)
        with pytest.raises(StaleEpochError, match="epoch 1 is less than the last promised epoch 2"):
            accept_recovery(j, w.req(), prep.segment_state, "http://unused")
        with pytest.raises(InvalidRequestError, match="bad recovery state"):
            accept_recovery(j, w2.req(), pb.SegmentStateProto(start_txid=1, end_txid=0), "x")
    finally:
        j.close()


def test_accept_recovery_downloads_a_longer_segment(tmp_path: Path) -> None:
    source = tmp_path / "source"
    source.write_bytes(HEADER + txns(1, 5))
    j = open_journal(tmp_path, fetch=copy_fetch(source))
    j.format(NS, force=False)
    try:
        j.new_epoch(NS, 1)
        w = Writer(1)
        j.start_log_segment(w.req(), 1, -64)
        write(j, w, 1, 1, 3)
        j.new_epoch(NS, 2)
        w2 = Writer(2)
        j.prepare_recovery(w2.req(), 1)
        accept_recovery(
            j,
            w2.req(),
            pb.SegmentStateProto(start_txid=1, end_txid=5, is_in_progress=True),
            PEER_URL,
        )
        assert scan_file(current(j) / inprogress_name(1)).last_txid == 5
        assert j.storage.read_paxos(1).accepted_in_epoch == 2  # type: ignore[union-attr]
        assert j.highest_written_txid == 5
        j.finalize_log_segment(w2.req(committed=5), 1, 5)
        assert (current(j) / finalized_name(1, 5)).read_bytes() == HEADER + txns(1, 5)
        # The decision is kept: a later prepare reports the epoch that finalized the copy.
        assert j.storage.read_paxos(1).accepted_in_epoch == 2  # type: ignore[union-attr]
        j.new_epoch(NS, 3)
        prep = j.prepare_recovery(Writer(3).req(), 1)
        assert not prep.segment_state.is_in_progress and prep.segment_state.end_txid == 5
        assert prep.accepted_in_epoch == 2
    finally:
        j.close()


def test_a_bad_finalized_segment_moved_aside_takes_its_kept_decision_along(
    tmp_path: Path,
) -> None:
    source = tmp_path / "source"
    source.write_bytes(HEADER + txns(1, 5))
    j = open_journal(tmp_path, fetch=copy_fetch(source))
    j.format(NS, force=False)
    j.new_epoch(NS, 1)
    w = Writer(1)
    seg = pb.SegmentStateProto(start_txid=1, end_txid=5, is_in_progress=True)
    accept_recovery(j, w.req(), seg, PEER_URL)
    j.finalize_log_segment(w.req(committed=5), 1, 5)
    assert j.storage.read_paxos(1) is not None
    j.close()
    final = tmp_path / "test" / "current" / finalized_name(1, 5)
    final.write_bytes(final.read_bytes()[:-10])  # lost its tail: moved aside at load
    j = open_journal(tmp_path)
    try:
        assert j.storage.read_paxos(1) is None
        j.new_epoch(NS, 2)
        # The moved-aside file is a tombstone: "absent" would hide txids this node held.
        w2 = Writer(2)
        with pytest.raises(TombstonedSegmentError, match=rf"{finalized_name(1, 5)}\.corrupt"):
            j.prepare_recovery(w2.req(), 1)
        good = tmp_path / "good"
        good.write_bytes(HEADER + txns(1, 5))
        assert install_synced_segment(j, good, 1, 5)  # the syncer fetched a good copy
        prep = j.prepare_recovery(w2.req(), 1)
        assert prep.segment_state.end_txid == 5 and not prep.segment_state.is_in_progress
        assert not prep.HasField("accepted_in_epoch")
    finally:
        j.close()


def test_accept_recovery_refuses_a_download_of_the_wrong_range(tmp_path: Path) -> None:
    source = tmp_path / "source"
    source.write_bytes(HEADER + txns(1, 2))
    j = open_journal(tmp_path, fetch=copy_fetch(source))
    j.format(NS, force=False)
    try:
        j.new_epoch(NS, 1)
        w = Writer(1)
        with pytest.raises(SegmentRangeError, match="holds txids 1-2, not 1-4"):
            accept_recovery(
                j,
                w.req(),
                pb.SegmentStateProto(start_txid=1, end_txid=4, is_in_progress=True),
                PEER_URL,
            )
        assert j.storage.read_paxos(1) is None
        assert list(current(j).glob("edits_*")) == []
    finally:
        j.close()


def test_accept_recovery_never_discards_a_committed_txid(journal: Journal) -> None:
    journal.new_epoch(NS, 1)
    w = Writer(1)
    journal.start_log_segment(w.req(), 1, -64)
    write(journal, w, 1, 1, 5)
    w.committed = 5
    journal.heartbeat(w.req())
    journal.new_epoch(NS, 2)
    w2 = Writer(2)
    journal.prepare_recovery(w2.req(), 1)
    with pytest.raises(CommittedTxidLossError, match="discard committed txid 5"):
        accept_recovery(
            journal,
            w2.req(),
            pb.SegmentStateProto(start_txid=1, end_txid=3, is_in_progress=True),
            PEER_URL,
        )
    assert scan_file(current(journal) / inprogress_name(1)).last_txid == 5


def test_accept_recovery_refuses_to_replace_a_segment_its_own_epoch_finalized(
    journal: Journal,
) -> None:
    journal.new_epoch(NS, 2)
    w = Writer(2)
    journal.start_log_segment(w.req(), 1, -64)
    write(journal, w, 1, 1, 3)
    journal.finalize_log_segment(w.req(committed=3), 1, 3)
    with pytest.raises(
        FinalizedReplaceError, match=r"replace finalized segment 1-3 \(decided in epoch 2\)"
    ):
        accept_recovery(
            journal,
            w.req(),
            pb.SegmentStateProto(start_txid=1, end_txid=4, is_in_progress=True),
            PEER_URL,
        )


class Crash(Exception):
    """A simulated process crash at a fault point."""


def crash() -> None:
    """Fault hook that crashes."""
    raise Crash


def crash_during_accept(
    tmp_path: Path, faults: FaultInjector
) -> tuple[pb.PrepareRecoveryResponseProto, int | None]:
    """Log 1-2, crash while accepting 1-4 in epoch 2, reopen and prepare in epoch 3."""
    source = tmp_path / "source"
    source.write_bytes(HEADER + txns(1, 4))
    j = open_journal(tmp_path, fetch=copy_fetch(source), faults=faults)
    j.format(NS, force=False)
    j.new_epoch(NS, 1)
    w = Writer(1)
    j.start_log_segment(w.req(), 1, -64)
    write(j, w, 1, 1, 2)
    j.new_epoch(NS, 2)
    with pytest.raises(Crash):
        accept_recovery(
            j,
            Writer(2).req(),
            pb.SegmentStateProto(start_txid=1, end_txid=4, is_in_progress=True),
            PEER_URL,
        )
    j.close()
    assert scan_file(tmp_path / "test" / "current" / inprogress_name(1)).last_txid == 2
    j = open_journal(tmp_path)
    try:
        j.new_epoch(NS, 3)
        prep = j.prepare_recovery(Writer(3).req(), 1)
        return prep, scan_file(current(j) / inprogress_name(1)).last_txid
    finally:
        j.close()


def test_crash_after_persisting_paxos_data_rolls_forward(tmp_path: Path) -> None:
    prep, on_disk = crash_during_accept(tmp_path, FaultInjector(after_persist_paxos_data=crash))
    assert (prep.accepted_in_epoch, prep.segment_state.end_txid) == (2, 4)
    assert on_disk == 4  # prepare rolled the downloaded file forward


def test_crash_before_persisting_paxos_data_leaves_the_old_log(tmp_path: Path) -> None:
    prep, on_disk = crash_during_accept(tmp_path, FaultInjector(before_persist_paxos_data=crash))
    assert not prep.HasField("accepted_in_epoch")
    assert prep.segment_state.end_txid == 2 and on_disk == 2


def half_done_accept_of_4_6(tmp_path: Path, hook: str) -> Journal:
    """Segment 1-3 finalized; epoch 2's accept of 4-6 (a download) crashes at a hook."""
    source = tmp_path / "source"
    source.write_bytes(HEADER + txns(4, 3))
    faults = FaultInjector()
    j = open_journal(tmp_path, fetch=copy_fetch(source), faults=faults)
    j.format(NS, force=False)
    j.new_epoch(NS, 1)
    w = Writer(1)
    j.start_log_segment(w.req(), 1, -64)
    write(j, w, 1, 1, 3)
    j.finalize_log_segment(w.req(committed=3), 1, 3)
    j.new_epoch(NS, 2)
    setattr(faults, hook, crash)
    with pytest.raises(Crash):
        accept_recovery(
            j,
            Writer(2).req(),
            pb.SegmentStateProto(start_txid=4, end_txid=6, is_in_progress=True),
            PEER_URL.replace("segmentTxId=1", "segmentTxId=4"),
        )
    setattr(faults, hook, lambda: None)
    return j


def staged_files(j: Journal) -> list[str]:
    """accept_recovery's downloads staged under the sync temp name."""
    return [p.name for p in current(j).iterdir() if ".epoch=" in p.name]


@pytest.mark.parametrize("restart", [False, True])
def test_a_half_done_accept_counts_wherever_the_newest_segment_is_computed(
    tmp_path: Path, restart: bool
) -> None:
    j = half_done_accept_of_4_6(tmp_path, "after_persist_paxos_data")
    assert staged_files(j) and j.storage.read_paxos(4) is not None
    if restart:
        j.close()
        j = open_journal(tmp_path)
    try:
        # The node accepted 4-6 (its paxos data says so): new_epoch reports segment 4, not
        # 1, and the node knows it holds txid 6 (else it refuses segment 7 as a gap).
        assert j.new_epoch(NS, 3) == 4
        assert j.highest_written_txid == 6
        assert staged_files(j) == []
        w = Writer(3)
        prep = j.prepare_recovery(w.req(), 4)
        assert (prep.accepted_in_epoch, prep.segment_state.end_txid) == (2, 6)
        accept_recovery(j, w.req(), prep.segment_state, "")
        j.finalize_log_segment(w.req(committed=6), 4, 6)
        j.start_log_segment(w.req(), 7, -64)
    finally:
        j.close()


@pytest.mark.parametrize("restart", [False, True])
def test_a_staged_download_without_its_paxos_data_is_discarded(
    tmp_path: Path, restart: bool
) -> None:
    j = half_done_accept_of_4_6(tmp_path, "before_persist_paxos_data")
    assert staged_files(j) and j.storage.read_paxos(4) is None
    if restart:
        j.close()
        j = open_journal(tmp_path)
    try:
        assert j.new_epoch(NS, 3) == 1  # never accepted: the old log stands
        assert j.highest_written_txid == 3
        assert staged_files(j) == []
        j.start_log_segment(Writer(3).req(), 4, -64)
    finally:
        j.close()


@pytest.mark.parametrize(
    ("content", "says"),
    [
        (b"", "bad length prefix"),
        (b"\xff" * 11, "bad length prefix"),
        (b"\x80", "bad length prefix"),
        (b"\x20abc", "truncated"),
    ],
    ids=["empty", "endless-varint", "cut-varint", "short-record"],
)
def test_a_damaged_paxos_record_is_a_storage_error_naming_the_file(
    tmp_path: Path, content: bytes, says: str
) -> None:
    storage = JNStorage(tmp_path / "j")
    storage.paxos_dir.mkdir(parents=True)
    storage.paxos_file(7).write_bytes(content)
    with pytest.raises(StorageError, match=says) as e:
        storage.read_paxos(7)
    assert str(storage.paxos_file(7)) in str(e.value)
