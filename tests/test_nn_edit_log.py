"""FSEditLog: segments, group commit, rolling and faults, against real JournalNodes.

JNCluster runs real JournalNode servers (IPC and HTTP on loopback) in the test's loop; the
in-memory cluster (qjm.testing.in_memory) drives the fault cases deterministically.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path

import pytest

from qjm.client.admin import new_namespace_info
from qjm.client.quorum_journal_manager import QuorumJournalManager
from qjm.config import NameNodeSettings
from qjm.editlog.ops import (
    EndLogSegmentOp,
    MkdirOp,
    Op,
    PermissionStatus,
    StartLogSegmentOp,
    read_ops,
)
from qjm.editlog.segments import list_segments
from qjm.namenode.edit_log import (
    EditLogClosedError,
    EditLogFatalError,
    FSEditLog,
    WriterFencedError,
)
from qjm.namenode.fs_image import EditLogGapError, local_edits, replay
from qjm.namenode.storage import NamespaceInfo, NNStorage
from qjm.protocol import qjournal_pb2 as pb
from qjm.testing.in_memory import InMemoryCluster
from qjm_cluster import FAST_SETTINGS, JNCluster

pytestmark = pytest.mark.timeout(60)

NS = new_namespace_info(cluster_id="CID-nn-test", namespace_id=777)
SETTINGS = NameNodeSettings()


def mkdir(i: int) -> MkdirOp:
    """A distinct op per i, checkable after a round trip."""
    return MkdirOp(
        inode_id=16386 + i,
        path=f"/d{i}",
        timestamp=1_700_000_000_000 + i,
        permission_status=PermissionStatus("alice", "supergroup", 0o755),
    )


class Fatal:
    """Records on_fatal calls."""

    def __init__(self) -> None:
        self.errors: list[BaseException] = []

    def __call__(self, e: BaseException) -> None:
        self.errors.append(e)


class Recorder:
    """A namespace stand-in for replay: records what it was given."""

    def __init__(self) -> None:
        self.ops: list[Op] = []

    def apply(self, op: Op) -> None:
        """Record the op."""
        self.ops.append(op)


def name_dir(tmp_path: Path, name: str = "nn1") -> NNStorage:
    """A formatted name dir."""
    st = NNStorage(tmp_path / name)
    st.format(NamespaceInfo.from_proto(NS))
    return st


async def writer(q: QuorumJournalManager) -> int:
    """Fence and recover; returns the first txid to write."""
    return await q.recover_unfinalized_segments() + 1


def segments_ops(
    current: Path, finalized_only: bool = True
) -> dict[tuple[int, int | None], list[tuple[int, Op]]]:
    """Every segment of a dir decoded: (start, end) -> [(txid, op)]."""
    out = {}
    for seg in list_segments(current):
        if finalized_only and seg.end is None:
            continue
        out[(seg.start, seg.end)] = list(read_ops(seg.path.read_bytes()))
    return out


def check_segment_shape(segs: dict[tuple[int, int | None], list[tuple[int, Op]]]) -> None:
    """Each finalized segment is START ... END over exactly its named txids."""
    for (start, end), ops in segs.items():
        assert [t for t, _ in ops] == list(range(start, (end or ops[-1][0]) + 1)), (start, end)
        assert isinstance(ops[0][1], StartLogSegmentOp), f"segment {start} starts with {ops[0]}"
        if end is not None:
            assert isinstance(ops[-1][1], EndLogSegmentOp), f"segment {start}-{end} ends {ops[-1]}"


@pytest.fixture
async def jns(tmp_path: Path) -> AsyncIterator[tuple[JNCluster, str]]:
    async with JNCluster(tmp_path / "jns") as c:
        jid = c.new_jid()
        await c.format(jid, NS)
        yield c, jid


# -- happy path -------------------------------------------------------------------------------
async def test_segments_on_the_quorum_and_in_the_name_dir(
    tmp_path: Path, jns: tuple[JNCluster, str]
) -> None:
    cluster, jid = jns
    st = name_dir(tmp_path)
    q = cluster.qjm(jid)
    fatal = Fatal()
    el = FSEditLog(st, q, SETTINGS, fatal)
    first = await writer(q)
    assert first == 1
    await el.open_for_write(first)
    assert el.synced_txid == 1 and el.last_txid == 1  # the START op, synced
    txids = [el.log(mkdir(i)) for i in range(10)]
    assert txids == list(range(2, 12))
    assert el.synced_txid == 1  # log() does not wait
    await el.sync(txids[-1])
    assert el.synced_txid == 11
    assert await el.roll() == 13  # END at 12, next START at 13
    assert st.seen_txid == 13
    t = await el.log_sync(mkdir(10))
    assert t == 14
    await el.close()
    assert el.last_txid == 15 and el.synced_txid == 15
    with pytest.raises(EditLogClosedError):
        el.log(mkdir(11))
    await q.close()
    assert fatal.errors == []

    local = segments_ops(st.current)
    assert sorted(local) == [(1, 12), (13, 15)]
    check_segment_shape(local)
    assert [op for _, op in local[(1, 12)][1:-1]] == [mkdir(i) for i in range(10)]
    for i in range(cluster.n):
        remote = segments_ops(cluster.current_dir(i, jid))
        assert remote == local, f"jn{i} differs from the local copy"
        names = {s.path.name for s in list_segments(cluster.current_dir(i, jid))}
        assert names == {s.path.name for s in list_segments(st.current)}


async def test_replay_of_the_local_edits_gives_every_op_in_order(
    tmp_path: Path, jns: tuple[JNCluster, str]
) -> None:
    cluster, jid = jns
    st = name_dir(tmp_path)
    q = cluster.qjm(jid)
    el = FSEditLog(st, q, replace(SETTINGS, roll_txns=7), Fatal())
    await el.open_for_write(await writer(q))
    for i in range(30):
        el.log(mkdir(i))
    await el.sync()
    await el.close()
    await q.close()
    ns = Recorder()
    last = replay(ns, local_edits(st, 0), 1)
    assert last == el.last_txid
    assert [op for op in ns.ops if isinstance(op, MkdirOp)] == [mkdir(i) for i in range(30)]
    # From an image at txid 10 on: ops up to 10 are skipped.
    ns2 = Recorder()
    assert replay(ns2, local_edits(st, 10), 11) == last
    assert len(ns2.ops) == last - 10


def test_replay_refuses_a_gap_naming_both_txids() -> None:
    ops: list[tuple[int, Op]] = [(5, mkdir(0)), (6, mkdir(1)), (9, mkdir(2))]
    with pytest.raises(EditLogGapError, match=r"expected txid 7, found txid 9"):
        replay(Recorder(), ops, 5)
    with pytest.raises(EditLogGapError, match=r"expected txid 4, found txid 5"):
        replay(Recorder(), ops, 4)


# -- group commit -----------------------------------------------------------------------------
async def test_concurrent_syncs_share_flushes(tmp_path: Path, jns: tuple[JNCluster, str]) -> None:
    cluster, jid = jns
    st = name_dir(tmp_path)
    q = cluster.qjm(jid)
    el = FSEditLog(st, q, SETTINGS, Fatal())
    await el.open_for_write(await writer(q))
    before = el.stats.flushes
    n = 200

    async def one(i: int) -> int:
        return await el.log_sync(mkdir(i))

    txids = await asyncio.gather(*(one(i) for i in range(n)))
    flushes = el.stats.flushes - before
    assert sorted(txids) == list(range(2, n + 2))
    assert el.synced_txid == n + 1
    assert flushes <= n // 10, f"{n} concurrent syncs took {flushes} flushes"
    assert el.stats.local_syncs <= el.stats.flushes
    await el.close()
    await q.close()


# -- rolling ----------------------------------------------------------------------------------
async def test_rolls_by_txns_and_by_bytes(tmp_path: Path, jns: tuple[JNCluster, str]) -> None:
    cluster, jid = jns
    st = name_dir(tmp_path)
    q = cluster.qjm(jid)
    el = FSEditLog(st, q, replace(SETTINGS, roll_txns=10, roll_bytes=1 << 30), Fatal())
    await el.open_for_write(await writer(q))
    for i in range(45):
        await el.log_sync(mkdir(i))
    await el.close()
    segs = segments_ops(st.current)
    check_segment_shape(segs)
    assert len(segs) >= 4, sorted(segs)
    assert all(end - start + 1 <= 12 for start, end in segs if end is not None), sorted(segs)
    starts = sorted(segs)
    for (_s1, e1), (s2, _) in itertools.pairwise(starts):
        assert e1 is not None and s2 == e1 + 1, starts
    await q.close()

    # By bytes: each mkdir is ~60 bytes, so 600 bytes is about ten ops.
    st2 = name_dir(tmp_path, "nn2")
    jid2 = cluster.new_jid()
    await cluster.format(jid2, NS)
    q2 = cluster.qjm(jid2)
    el2 = FSEditLog(st2, q2, replace(SETTINGS, roll_bytes=600), Fatal())
    await el2.open_for_write(await writer(q2))
    for i in range(40):
        await el2.log_sync(mkdir(i))
    await el2.close()
    await q2.close()
    segs2 = segments_ops(st2.current)
    check_segment_shape(segs2)
    assert len(segs2) >= 3 and el2.stats.rolls >= 2, sorted(segs2)


async def test_ops_logged_during_a_roll_go_to_the_next_segment(
    tmp_path: Path, jns: tuple[JNCluster, str]
) -> None:
    cluster, jid = jns
    st = name_dir(tmp_path)
    q = cluster.qjm(jid)
    el = FSEditLog(st, q, SETTINGS, Fatal())
    await el.open_for_write(await writer(q))
    el.log(mkdir(0))  # txid 2
    roll = asyncio.ensure_future(el.roll())
    await asyncio.sleep(0)  # the roll has written END (txid 3) and awaits its sync
    during = [el.log(mkdir(i)) for i in range(1, 4)]
    assert during == [5, 6, 7]  # 4 is the next segment's START
    await asyncio.gather(*(el.sync(t) for t in during))
    assert await roll == 4
    await el.close()
    await q.close()
    segs = segments_ops(st.current)
    check_segment_shape(segs)
    assert sorted(segs) == [(1, 3), (4, 8)]
    assert [op for _, op in segs[(4, 8)][1:-1]] == [mkdir(i) for i in range(1, 4)]


async def test_rolls_by_age(tmp_path: Path, jns: tuple[JNCluster, str]) -> None:
    cluster, jid = jns
    st = name_dir(tmp_path)
    q = cluster.qjm(jid)
    el = FSEditLog(st, q, replace(SETTINGS, roll_period_s=1), Fatal())
    await el.open_for_write(await writer(q))
    await el.log_sync(mkdir(0))
    deadline = asyncio.get_running_loop().time() + 10
    while el.stats.rolls < 1:
        assert asyncio.get_running_loop().time() < deadline, "no roll within 10 s"
        await asyncio.sleep(0.05)
    assert el.segment_start_txid == 4
    await el.close()
    await q.close()
    assert sorted(segments_ops(st.current)) == [(1, 3), (4, 5)]


# -- faults -----------------------------------------------------------------------------------
@pytest.fixture
async def mem(tmp_path: Path) -> AsyncIterator[InMemoryCluster]:
    async with InMemoryCluster(tmp_path / "mem") as c:
        q = mem_qjm(c)
        try:
            await q.format(NS)
        finally:
            await q.close()
        yield c


def mem_qjm(c: InMemoryCluster) -> QuorumJournalManager:
    """A writer on the in-memory cluster."""
    return QuorumJournalManager(c.uri("nn"), None, FAST_SETTINGS, client_factory=c.client)  # type: ignore[arg-type]


async def test_a_quorum_failure_is_fatal_once_and_for_good(
    tmp_path: Path, mem: InMemoryCluster
) -> None:
    st = name_dir(tmp_path)
    q = mem_qjm(mem)
    fatal = Fatal()
    el = FSEditLog(st, q, SETTINGS, fatal)
    await el.open_for_write(await writer(q))
    await el.log_sync(mkdir(0))
    mem.faults[0].fail("journal")
    mem.faults[1].fail("journal")
    waiters = [el.sync(el.log(mkdir(i))) for i in range(1, 6)]
    results = await asyncio.gather(*waiters, return_exceptions=True)
    assert all(isinstance(r, EditLogFatalError) for r in results), results
    assert len(fatal.errors) == 1
    assert isinstance(fatal.errors[0], EditLogFatalError)
    assert "quorum journal failed" in str(fatal.errors[0])
    assert el.synced_txid == 2
    with pytest.raises(EditLogFatalError):
        el.log(mkdir(9))
    with pytest.raises(EditLogFatalError):
        await el.sync(2)  # already synced, but the log is dead
    with pytest.raises(EditLogFatalError):
        await el.roll()
    await el.close()  # aborts, finalizes nothing
    assert len(fatal.errors) == 1
    await q.close()


async def test_one_node_down_is_not_fatal(tmp_path: Path, mem: InMemoryCluster) -> None:
    st = name_dir(tmp_path)
    q = mem_qjm(mem)
    fatal = Fatal()
    el = FSEditLog(st, q, SETTINGS, fatal)
    await el.open_for_write(await writer(q))
    await mem.crash(2)
    for i in range(5):
        await el.log_sync(mkdir(i))
    await el.roll()
    await el.close()
    assert fatal.errors == []
    await q.close()


async def test_a_fenced_writer_names_both_epochs(tmp_path: Path, mem: InMemoryCluster) -> None:
    st = name_dir(tmp_path)
    q = mem_qjm(mem)
    fatal = Fatal()
    el = FSEditLog(st, q, SETTINGS, fatal)
    await el.open_for_write(await writer(q))
    await el.log_sync(mkdir(0))
    assert q.epoch == 1
    q2 = mem_qjm(mem)
    assert await q2.recover_unfinalized_segments() == 2  # the new writer fences epoch 1
    assert q2.epoch == 2
    with pytest.raises(WriterFencedError) as info:
        await el.log_sync(mkdir(1))
    msg = str(info.value)
    assert "epoch 1" in msg and "epoch 2" in msg, msg
    assert info.value.my_epoch == 1 and info.value.newer_epoch == 2
    assert len(fatal.errors) == 1 and isinstance(fatal.errors[0], WriterFencedError)
    with pytest.raises(WriterFencedError):
        el.log(mkdir(2))
    el.abort()
    await q.close()
    await q2.close()


async def test_a_local_failure_disables_the_local_journal_only(
    tmp_path: Path, mem: InMemoryCluster, caplog: pytest.LogCaptureFixture
) -> None:
    st = name_dir(tmp_path)
    q = mem_qjm(mem)
    fatal = Fatal()
    el = FSEditLog(st, q, SETTINGS, fatal)
    await el.open_for_write(await writer(q))
    await el.log_sync(mkdir(0))

    def broken(records: bytes) -> None:
        raise OSError(5, "Input/output error")

    el.local.write_and_sync = broken  # type: ignore[method-assign]
    with caplog.at_level(logging.WARNING, logger="qjm.namenode.journal_set"):
        t = await el.log_sync(mkdir(1))
    assert el.synced_txid == t
    assert not el.local.enabled
    assert "Input/output error" in caplog.text and "disabled" in caplog.text
    for i in range(2, 5):
        await el.log_sync(mkdir(i))
    await el.roll()  # the next segment goes to the quorum only
    await el.log_sync(mkdir(5))
    await el.close()
    assert fatal.errors == []
    on_quorum = mem.segments(0, "nn")
    assert sorted(on_quorum) == [(1, 7), (8, 10)]  # START, 5 mkdirs, END; START, 1, END
    await q.close()


async def test_open_settles_what_a_crashed_run_left_locally(
    tmp_path: Path, mem: InMemoryCluster
) -> None:
    st = name_dir(tmp_path)
    q = mem_qjm(mem)
    el = FSEditLog(st, q, SETTINGS, Fatal())
    await el.open_for_write(await writer(q))
    for i in range(5):
        await el.log_sync(mkdir(i))
    el.abort()  # a crash: edits_inprogress_1 stays, holding 1-6
    await q.close()
    assert [s.path.name for s in list_segments(st.current)] == ["edits_inprogress_" + "1".zfill(19)]

    q2 = mem_qjm(mem)
    first = await writer(q2)
    assert first == 7
    el2 = FSEditLog(st, q2, SETTINGS, Fatal())
    await el2.open_for_write(first)
    await el2.log_sync(mkdir(5))
    await el2.close()
    await q2.close()
    segs = segments_ops(st.current)
    assert sorted(segs) == [(1, 6), (7, 9)]
    ns = Recorder()
    assert replay(ns, local_edits(st, 0), 1) == 9


async def test_calls_out_of_order_are_refused(tmp_path: Path, mem: InMemoryCluster) -> None:
    st = name_dir(tmp_path)
    q = mem_qjm(mem)
    el = FSEditLog(st, q, SETTINGS, Fatal())
    with pytest.raises(EditLogClosedError, match="not open"):
        el.log(mkdir(0))
    await el.open_for_write(await writer(q))
    with pytest.raises(ValueError, match="never logged"):
        await el.sync(99)
    with pytest.raises(Exception, match="already open"):
        await el.open_for_write(5)
    await el.close()
    await q.close()


def test_stale_namespace_proto_is_usable() -> None:
    assert isinstance(NS, pb.NamespaceInfoProto)
    assert NamespaceInfo.from_proto(NS).namespace_id == 777
