"""FSEditLog: segments, group commit, rolling and faults, against real JournalNodes.

JNCluster runs real JournalNode servers (IPC and HTTP on loopback) in the test's loop; the
in-memory cluster (qjm.testing.in_memory) drives the fault cases deterministically.
"""

from __future__ import annotations

import asyncio
import getpass
import itertools
import logging
import threading
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path

import pytest

from conftest import JNFactory
from qjm.client.admin import new_namespace_info
from qjm.client.decisions import FormatRefused
from qjm.client.quorum_journal_manager import QuorumJournalManager
from qjm.client.reader import QuorumJournalReader
from qjm.client.uri import parse_qjournal_uri
from qjm.config import ClusterConfig, JournalNodeConfig, NameNodeConfig, NameNodeSettings
from qjm.editlog.ops import (
    EndLogSegmentOp,
    MkdirOp,
    Op,
    PermissionStatus,
    StartLogSegmentOp,
    decode_op,
    encode_ops,
    read_ops,
)
from qjm.editlog.segments import list_segments
from qjm.namenode.admin import (
    format_namenode,
    initialize_shared_edits,
    namespace_factory,
    recover,
)
from qjm.namenode.edit_log import (
    EditLogClosedError,
    EditLogFatalError,
    EditLogRefusedError,
    FSEditLog,
    WriterFencedError,
)
from qjm.namenode.errors import NamenodeError
from qjm.namenode.fs_image import EditLogGapError, load_newest, local_edits, replay
from qjm.namenode.image import ImageContents, NameSystemInfo
from qjm.namenode.storage import NamespaceInfo, NNStorage, StorageFormatError, empty_image
from qjm.namenode.types import Caller
from qjm.protocol import qjournal_pb2 as pb
from qjm.testing.in_memory import InMemoryCluster
from qjm.testing.wait import wait_until_async
from qjm_cluster import FAST_SETTINGS, JNCluster, settle

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
    await settle(q)  # a quorum answered the finalize; the third node gets it too
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
    # START, 5 mkdirs, END; START, 1, END: on a quorum (close returns once two nodes
    # finalized; the third may still be finalizing)
    holding = [i for i in range(3) if sorted(mem.segments(i, "nn")) == [(1, 7), (8, 10)]]
    assert len(holding) >= 2, {i: sorted(mem.segments(i, "nn")) for i in range(3)}
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


# -- admin: format, initialize-shared-edits, recover ------------------------------------------
def cluster_config(cluster: JNCluster, jid: str, tmp_path: Path) -> ClusterConfig:
    """A cluster config naming the test's JournalNodes and one NameNode, nn1."""
    return ClusterConfig(
        journal_id=jid,
        journalnodes={
            f"jn{i}": JournalNodeConfig(
                f"jn{i}",
                cluster.address(i),
                f"127.0.0.1:{cluster.http_ports[i]}",
                str(cluster.edits_dir(i)),
            )
            for i in range(cluster.n)
        },
        qjournal=FAST_SETTINGS,
        namenodes={
            "nn1": NameNodeConfig("nn1", "127.0.0.1:1", "127.0.0.1:2", str(tmp_path / "nn1"))
        },
    )


class Tree:
    """A namespace stand-in for recover: counts what it applies, refuses a chosen path."""

    def __init__(self, image: object = None, refuse: str | None = None) -> None:
        self.applied: list[Op] = []
        self.refuse = refuse

    def apply(self, op: Op) -> None:
        """Record the op, or refuse it like a contradicting edit."""
        if isinstance(op, MkdirOp) and op.path == self.refuse:
            raise ValueError(f"parent of {op.path} does not exist")
        self.applied.append(op)

    def to_image(self, txid: int, ns_info: NameSystemInfo) -> ImageContents:
        """The empty tree at txid."""
        return empty_image(ns_info.namespace_id, txid, owner="hdfs")


def write_segment_file(current: Path, name: str, ops: list[tuple[int, Op]]) -> Path:
    """A local edits file holding these ops."""
    p = current / name
    p.write_bytes(encode_ops(ops))
    return p


async def test_format_namenode_formats_the_journal_and_the_name_dir(tmp_path: Path) -> None:
    async with JNCluster(tmp_path / "jns") as cluster:
        cfg = cluster_config(cluster, "fmt", tmp_path)
        ns = await format_namenode(cfg, "nn1")
        with NNStorage(tmp_path / "nn1") as st:
            assert st.read_ns_info() == ns
            assert [t for t, _ in st.images()] == [0]
        for i in range(cluster.n):
            assert (cluster.current_dir(i, "fmt") / "VERSION").is_file()
        q = cluster.qjm("fmt")
        found = await q.discover_namespace()
        await q.close()
        assert found.storage_info.namespace_id == ns.namespace_id
        with pytest.raises(StorageFormatError, match="not empty.*--force"):
            await format_namenode(cfg, "nn1")
        ns2 = await format_namenode(cfg, "nn1", force=True)
        assert ns2.cluster_id != ns.cluster_id
        with NNStorage(tmp_path / "nn1") as st:
            assert st.read_ns_info() == ns2


async def test_format_namenode_needs_every_journalnode(tmp_path: Path) -> None:
    async with JNCluster(tmp_path / "jns") as cluster:
        cfg = cluster_config(cluster, "fmt", tmp_path)
        await cluster.stop_node(1)
        with pytest.raises(FormatRefused, match="every JournalNode"):
            await format_namenode(cfg, "nn1")
        with NNStorage(tmp_path / "nn1") as st:
            assert not st.is_formatted()


async def test_initialize_shared_edits_copies_the_local_edits(tmp_path: Path) -> None:
    async with JNCluster(tmp_path / "jns") as cluster:
        cfg = cluster_config(cluster, "init", tmp_path)
        st = name_dir(tmp_path)
        write_segment_file(
            st.current,
            "edits_0000000000000000001-0000000000000000003",
            [(1, StartLogSegmentOp()), (2, mkdir(0)), (3, EndLogSegmentOp())],
        )
        write_segment_file(
            st.current,
            "edits_inprogress_0000000000000000004",
            [(4, StartLogSegmentOp()), (5, mkdir(1)), (6, mkdir(2))],
        )
        st.unlock()
        report = await initialize_shared_edits(cfg, "nn1")
        assert report.segments == [(1, 3), (4, 6)] and report.last_txid == 6
        assert report.image_txid == 0
        uri = parse_qjournal_uri(cluster.uri("init"))
        async with QuorumJournalReader(uri, FAST_SETTINGS) as reader:
            got = [(raw.txid, decode_op(raw)) async for raw in reader.read(1)]
        assert got == [
            (1, StartLogSegmentOp()),
            (2, mkdir(0)),
            (3, EndLogSegmentOp()),
            (4, StartLogSegmentOp()),
            (5, mkdir(1)),
            (6, mkdir(2)),
        ]
        # A gap in the local edits is refused before the journal is touched.
        with NNStorage(tmp_path / "nn1") as st2:
            write_segment_file(
                st2.current, "edits_0000000000000000009-0000000000000000009", [(9, mkdir(3))]
            )
        with pytest.raises(NamenodeError, match="expected txid 7.*starts at 9"):
            await initialize_shared_edits(cfg, "nn1", force=True)


async def test_recover_keeps_the_longest_valid_run_and_saves_an_image(tmp_path: Path) -> None:
    async with JNCluster(tmp_path / "jns") as cluster:
        cfg = cluster_config(cluster, "rec", tmp_path)
        st = name_dir(tmp_path)
        write_segment_file(
            st.current,
            "edits_0000000000000000001-0000000000000000004",
            [(1, StartLogSegmentOp()), (2, mkdir(0)), (3, mkdir(1)), (4, EndLogSegmentOp())],
        )
        bad = write_segment_file(
            st.current,
            "edits_inprogress_0000000000000000005",
            [(5, StartLogSegmentOp()), (6, mkdir(2)), (7, mkdir(3)), (8, mkdir(4))],
        )
        raw = bytearray(bad.read_bytes())
        raw[-30] ^= 0xFF  # damage txid 8, the last op
        bad.write_bytes(bytes(raw))
        st.unlock()
        trees: list[Tree] = []

        def factory(image: object) -> Tree:
            trees.append(Tree(image))
            return trees[-1]

        # Without the shared journal, the local edits are applied only when asked for.
        unasked = await recover(cfg, "nn1", factory, use_shared=False)
        assert unasked.last_txid == 0 and unasked.source == "image only"
        assert [d.txid for d in unasked.dropped_ops] == list(range(1, 8)), unasked.lines()
        with NNStorage(tmp_path / "nn1") as st1:
            assert [t for t, _ in st1.images()] == [0]
        trees.clear()
        report = await recover(cfg, "nn1", factory, use_shared=False, local_beyond_journal=True)
        assert report.image_txid == 0 and report.last_txid == 7 and report.source == "local"
        assert report.applied == 7
        assert any("edits_inprogress_0000000000000000005" in d for d in report.dropped), report
        assert [op for op in trees[0].applied if isinstance(op, MkdirOp)] == [
            mkdir(i) for i in range(4)
        ]
        with NNStorage(tmp_path / "nn1") as st2:
            assert [t for t, _ in st2.images()] == [0, 7]
            assert st2.seen_txid >= 7

        # An edit that cannot be applied ends the run there.
        def refusing(image: object) -> Tree:
            return Tree(image, refuse="/d1")

        with NNStorage(tmp_path / "nn1") as st3:
            st3.image_path(7).unlink()
        report2 = await recover(cfg, "nn1", refusing, use_shared=False, local_beyond_journal=True)
        assert report2.last_txid == 2
        assert any("OP_MKDIR at txid 3 cannot be applied" in d for d in report2.dropped), report2
        assert [(d.txid, d.path) for d in report2.dropped_ops][:2] == [(3, "/d1"), (4, None)]


async def test_recover_reads_the_shared_journal_when_it_holds_more(tmp_path: Path) -> None:
    async with JNCluster(tmp_path / "jns") as cluster:
        cfg = cluster_config(cluster, "recs", tmp_path)
        ns = await format_namenode(cfg, "nn1")
        st = NNStorage(tmp_path / "nn1")
        q = cluster.qjm("recs", ns_info=ns.to_proto())
        el = FSEditLog(st, q, SETTINGS, Fatal())
        await el.open_for_write(await writer(q))
        for i in range(5):
            await el.log_sync(mkdir(i))
        await el.roll()
        await el.log_sync(mkdir(5))  # txid 9, in the open segment (START is 8)
        el.abort()  # a crash: the shared journal holds 1-9, the open segment unfinalized
        await q.close()
        for seg in list_segments(st.current):
            seg.path.unlink()  # the local copy is lost
        st.unlock()
        trees: list[Tree] = []

        def factory(image: object) -> Tree:
            trees.append(Tree(image))
            return trees[-1]

        report = await recover(cfg, "nn1", factory)
        assert report.source == "shared" and report.last_txid == 9, report.lines()
        assert [op for op in trees[0].applied if isinstance(op, MkdirOp)] == [
            mkdir(i) for i in range(6)
        ]
        assert report.image_path is not None and report.image_path.name.endswith("09")


# -- real JournalNode processes ---------------------------------------------------------------
@pytest.mark.slow
async def test_with_journalnode_processes_one_loss_is_survived_two_are_fatal(
    tmp_path: Path, jn_factory: JNFactory
) -> None:
    nodes = [jn_factory.start(f"jn{i}") for i in range(3)]
    uri = f"qjournal://{';'.join(n.rpc for n in nodes)}/procs"
    q0 = QuorumJournalManager(uri, None, FAST_SETTINGS)
    await q0.format(NS)
    await q0.close()
    st = name_dir(tmp_path)
    q = QuorumJournalManager(uri, None, FAST_SETTINGS)
    fatal = Fatal()
    el = FSEditLog(st, q, replace(SETTINGS, roll_txns=50), fatal)
    await el.open_for_write(await writer(q))

    async def batch(start: int, n: int) -> list[int]:
        return list(await asyncio.gather(*(el.log_sync(mkdir(i)) for i in range(start, start + n))))

    first = await batch(0, 100)
    deadline = asyncio.get_running_loop().time() + 10
    while el.stats.rolls < 1:  # the automatic roll runs once the burst of log() calls ends
        assert asyncio.get_running_loop().time() < deadline, "no automatic roll"
        await asyncio.sleep(0.01)
    jn_factory.stop(nodes[2])  # one of three down: the quorum goes on
    second = await batch(100, 100)
    assert el.synced_txid >= max(second)
    assert fatal.errors == []
    jn_factory.stop(nodes[1])  # two of three down: fatal
    results = await asyncio.gather(
        *(el.log_sync(mkdir(i)) for i in range(200, 210)), return_exceptions=True
    )
    assert all(isinstance(r, EditLogFatalError) for r in results), results
    assert len(fatal.errors) == 1
    el.abort()
    await q.close()
    # Every acknowledged op is on the surviving node or its quorum peer and in the name dir.
    acked = set(first) | set(second)
    local = {t for _, ops in segments_ops(st.current, finalized_only=False).items() for t, _ in ops}
    assert acked <= local
    on_jn0 = {
        t
        for _, ops in segments_ops(nodes[0].edits_dir / "procs" / "current", False).items()
        for t, _ in ops
    }
    assert acked <= on_jn0, sorted(acked - on_jn0)[:5]


# -- with the real namespace ------------------------------------------------------------------
def contents_key(c: ImageContents) -> tuple[object, ...]:
    """What makes two images' trees equal (inodes, parents, last inode id)."""
    return (sorted(c.inodes, key=lambda i: i.id), c.parents, c.last_inode_id)


async def test_namespace_written_through_the_edit_log_replays_equal(tmp_path: Path) -> None:
    async with JNCluster(tmp_path / "jns") as cluster:
        cfg = cluster_config(cluster, "real", tmp_path)
        info = await format_namenode(cfg, "nn1")
        st = NNStorage(tmp_path / "nn1")
        factory = namespace_factory(cfg)
        ns, image_txid = load_newest(st, factory)
        assert image_txid == 0
        q = cluster.qjm("real", ns_info=info.to_proto())
        el = FSEditLog(st, q, replace(SETTINGS, roll_txns=25), Fatal())
        await el.open_for_write(await writer(q))
        me = Caller(getpass.getuser(), superuser=True)

        async def mkdirs(i: int) -> int:
            ops = ns.plan_mkdirs(f"/a{i % 4}/b{i}", me, 0o755, True, 1_700_000_000_000 + i)
            txid = 0
            for op in ops:
                ns.apply(op)
                txid = el.log(op)
            await el.sync(txid)
            return txid

        await asyncio.gather(*(mkdirs(i) for i in range(60)))
        last = el.last_txid
        await el.close()
        await q.close()
        ns_info = NameSystemInfo(namespace_id=info.namespace_id, txid=0)
        expected = contents_key(ns.to_image(last + 1, ns_info))

        # Start-up from the name dir: the image, then the local edits after it.
        again, t0 = load_newest(st, factory)
        assert replay(again, local_edits(st, t0), t0 + 1) == last + 1  # the END op
        assert contents_key(again.to_image(last + 1, ns_info)) == expected
        # The same from the shared journal.
        shared, _ = load_newest(st, factory)
        uri = parse_qjournal_uri(cluster.uri("real"))
        async with QuorumJournalReader(uri, FAST_SETTINGS) as reader:
            ops = [(raw.txid, decode_op(raw)) async for raw in reader.read(1)]
        assert replay(shared, ops, 1) == last + 1
        assert contents_key(shared.to_image(last + 1, ns_info)) == expected
        # A checkpoint loads back to the same tree.
        await asyncio.to_thread(st.save_image, again, last + 1)
        loaded, t1 = load_newest(st, factory)
        assert t1 == last + 1
        assert contents_key(loaded.to_image(t1, ns_info)) == expected
        st.unlock()

        # recover with the default (real) namespace finds nothing newer and says so.
        report = await recover(cfg, "nn1")
        assert report.image_txid == last + 1 and report.source == "image only"


async def test_open_for_write_when_fenced_names_both_epochs_without_on_fatal(
    tmp_path: Path, mem: InMemoryCluster
) -> None:
    st = name_dir(tmp_path)
    q = mem_qjm(mem)
    first = await writer(q)
    q2 = mem_qjm(mem)
    await q2.recover_unfinalized_segments()  # fences q before it opens a segment
    fatal = Fatal()
    el = FSEditLog(st, q, SETTINGS, fatal)
    with pytest.raises(WriterFencedError, match=r"epoch 1 was fenced.*epoch 2"):
        await el.open_for_write(first)
    assert fatal.errors == []  # the caller decides; nothing was being written
    assert not el.is_open
    await q.close()
    await q2.close()


async def test_open_for_write_without_a_quorum_is_a_clear_error(
    tmp_path: Path, mem: InMemoryCluster
) -> None:
    st = name_dir(tmp_path)
    q = mem_qjm(mem)
    first = await writer(q)
    mem.faults[0].fail("startLogSegment")
    mem.faults[1].fail("startLogSegment")
    el = FSEditLog(st, q, SETTINGS, Fatal())
    with pytest.raises(EditLogRefusedError, match="cannot start edit log segment 1 on the quorum"):
        await el.open_for_write(first)
    with pytest.raises(EditLogClosedError):
        el.log(mkdir(0))
    await q.close()


async def test_purge_deletes_old_segments_locally_and_on_the_journalnodes(
    tmp_path: Path, mem: InMemoryCluster
) -> None:
    st = name_dir(tmp_path)
    q = mem_qjm(mem)
    el = FSEditLog(st, q, SETTINGS, Fatal())
    await el.open_for_write(await writer(q))
    for i in range(3):
        await el.log_sync(mkdir(i))
        await el.roll()
    # Segments 1-3, 4-6, 7-9 finalized; 10 open.
    assert sorted(segments_ops(st.current)) == [(1, 3), (4, 6), (7, 9)]
    assert await el.purge_logs_older_than(7) == 2
    assert sorted(segments_ops(st.current)) == [(7, 9)]
    deadline = asyncio.get_running_loop().time() + 10
    while any(sorted(mem.segments(i, "nn")) != [(7, 9)] for i in range(3)):
        assert asyncio.get_running_loop().time() < deadline, [
            mem.segment_names(i, "nn") for i in range(3)
        ]
        await asyncio.sleep(0.01)
    await el.close()
    await q.close()


async def test_abort_with_syncs_waiting_is_not_a_fatal_failure(
    tmp_path: Path, mem: InMemoryCluster
) -> None:
    st = name_dir(tmp_path)
    q = mem_qjm(mem)
    fatal = Fatal()
    el = FSEditLog(st, q, SETTINGS, fatal)
    await el.open_for_write(await writer(q))
    for i in range(3):
        mem.faults[i].hold("journal")
    waiting = asyncio.ensure_future(el.log_sync(mkdir(0)))
    deadline = asyncio.get_running_loop().time() + 10
    while el.stats.flushes < 2:  # START's flush, then this one, now held at the nodes
        assert asyncio.get_running_loop().time() < deadline
        await asyncio.sleep(0.01)
    el.abort()  # e.g. shutting down
    await mem.crash(0)  # the batch in flight now fails
    await mem.crash(1)
    result = (await asyncio.gather(waiting, return_exceptions=True))[0]
    assert isinstance(result, EditLogClosedError), result
    assert fatal.errors == [], fatal.errors
    assert el.failed is None
    await q.close()


async def test_a_flush_starts_while_the_previous_one_awaits_its_quorum(
    tmp_path: Path, mem: InMemoryCluster
) -> None:
    st = name_dir(tmp_path)
    q = mem_qjm(mem)
    fatal = Fatal()
    el = FSEditLog(st, q, SETTINGS, fatal, max_flushes_in_flight=2)
    await el.open_for_write(await writer(q))
    await el.log_sync(mkdir(0))
    local_gate = threading.Event()
    real_write = el.local.write_and_sync
    local_calls: list[bytes] = []

    def slow_local(records: bytes) -> None:
        local_calls.append(records)
        if len(local_calls) == 1:  # the first batch's local copy waits for the test
            assert local_gate.wait(10), "the test never released the local write"
        real_write(records)

    el.local.write_and_sync = slow_local  # type: ignore[method-assign]
    gates = [mem.faults[i].hold("journal", times=1) for i in range(3)]
    batches = el.quorum_batches
    t1 = el.log(mkdir(1))
    s1 = asyncio.ensure_future(el.sync(t1))
    for g in gates:
        await g.wait_held()
    t2 = el.log(mkdir(2))
    t3 = el.log(mkdir(3))
    s2 = asyncio.ensure_future(el.sync(t2))
    s3 = asyncio.ensure_future(el.sync(t3))
    # The second flush goes out while the first still awaits its quorum; t2 and t3 share it.
    await wait_until_async("a second batch in flight", lambda: el.quorum_batches == batches + 2)
    assert el.stats.flushes >= 2
    assert not (s1.done() or s2.done() or s3.done())
    assert el.synced_txid == t1 - 1
    for g in gates:
        g.open()
    stream = el._stream
    assert stream is not None
    await wait_until_async("both batches acknowledged", lambda: stream.acked_txid >= t3)
    # The quorum holds both, but the first batch's local copy does not yet: nobody returns.
    await asyncio.sleep(0)
    assert not (s1.done() or s2.done() or s3.done()), "a sync returned before the local copy"
    assert el.synced_txid == t1 - 1
    local_gate.set()
    await asyncio.wait_for(asyncio.gather(s1, s2, s3), 10)
    assert el.synced_txid == t3
    assert len(local_calls) == 2  # one local write per flush, in order
    assert el.quorum_batches == batches + 2
    await el.close()
    await q.close()
    assert fatal.errors == []
    local = segments_ops(st.current)
    check_segment_shape(local)
    assert [op for _, op in local[(1, 6)][1:-1]] == [mkdir(i) for i in range(4)]
    assert sorted(mem.segments(0, "nn")) == [(1, 6)]


async def test_a_later_sync_waits_for_every_earlier_flush(
    tmp_path: Path, mem: InMemoryCluster
) -> None:
    st = name_dir(tmp_path)
    q = mem_qjm(mem)
    el = FSEditLog(st, q, SETTINGS, Fatal(), max_flushes_in_flight=4)
    await el.open_for_write(await writer(q))
    gates = [mem.faults[i].hold("journal", times=1) for i in range(3)]
    t1 = el.log(mkdir(1))
    s1 = asyncio.ensure_future(el.sync(t1))
    for g in gates:
        await g.wait_held()
    t2 = el.log(mkdir(2))
    s2 = asyncio.ensure_future(el.sync(t2))
    await wait_until_async("the second flush started", lambda: el.stats.flushes >= 3)
    gates[2].open()  # one node is no quorum: both wait
    await asyncio.sleep(0.05)
    assert not (s1.done() or s2.done())
    gates[1].open()
    await asyncio.wait_for(s2, 10)
    assert s1.done() and el.synced_txid == t2
    gates[0].open()
    await el.close()
    await q.close()


async def test_a_roll_syncs_the_new_segments_start(
    tmp_path: Path, jns: tuple[JNCluster, str]
) -> None:
    cluster, jid = jns
    st = name_dir(tmp_path)
    q = cluster.qjm(jid)
    el = FSEditLog(st, q, replace(SETTINGS, roll_txns=5), Fatal())
    await el.open_for_write(await writer(q))
    assert await el.roll() == 3
    assert el.synced_txid == 3  # START of the new segment, synced as HDFS does
    for i in range(4):
        el.log(mkdir(i))  # txids 4-7: the automatic roll starts at txid 8 (the 5th txn)
    await wait_until_async("an automatic roll", lambda: el.stats.rolls == 2)
    assert el.segment_start_txid == 9  # END is 8
    await wait_until_async("the auto-rolled START synced", lambda: el.synced_txid == 9)
    await el.close()
    await q.close()
    segs = segments_ops(st.current)
    check_segment_shape(segs)
    assert sorted(segs) == [(1, 2), (3, 8), (9, 10)]
