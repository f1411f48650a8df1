"""Safety of the quorum client (design §J): promises, fenced writers' edits, finalize, reads.

In-process JournalNodes where timing must be controlled; each test builds the
state its docstring describes with real writers whose RPCs to chosen nodes fail.
"""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import Any

import pytest

from qjm.client.admin import new_namespace_info
from qjm.client.journalnode_client import JournalNodeClient
from qjm.client.logger_channel import request_info
from qjm.client.quorum_call import QuorumError
from qjm.client.quorum_journal_manager import QuorumJournalManager
from qjm.client.reader import IncompleteReadError, QuorumJournalReader
from qjm.client.uri import parse_qjournal_uri
from qjm.editlog.file_journal import truncate_after as _truncate_after
from qjm.editlog.file_names import finalized_name
from qjm.editlog.framing import OP_OPAQUE
from qjm.errors import ConfigError, QjmError
from qjm.protocol import qjournal_pb2 as pb
from qjm.protocol.errors import EpochError, UnpromisedEpochError
from qjm.protocol.namespace import NamespaceInfo
from qjm.protocol.qjournal import journal_id
from qjm.testing.faults import NodeFaults
from qjm_cluster import (
    FAST_SETTINGS,
    FaultyClient,
    JNCluster,
    check_one_value_per_txid,
    payload,
    recover,
    settle,
    write_segment,
    write_txns,
)

pytestmark = pytest.mark.timeout(60)


def faults3() -> list[NodeFaults]:
    return [NodeFaults() for _ in range(3)]


def reader_of(
    cluster: JNCluster, jid: str, faults: list[NodeFaults] | None = None
) -> QuorumJournalReader:
    """A reader of every node, its RPCs passing through per-node faults."""
    plans = faults or faults3()
    by_addr = {cluster.address(i): plans[i] for i in range(cluster.n)}

    def factory(addr: str) -> Any:
        return FaultyClient(JournalNodeClient(addr), by_addr[addr])

    return QuorumJournalReader(
        parse_qjournal_uri(cluster.uri(jid)), FAST_SETTINGS, client_factory=factory
    )


# -- D1: only new_epoch raises a promise ---------------------------------------------------------
async def test_a_request_above_the_promise_is_refused_naming_both_epochs(tmp_path: Path) -> None:
    async with JNCluster(tmp_path) as cluster:
        jid = cluster.new_jid()
        await cluster.format(jid)
        q = cluster.qjm(jid)
        await q.recover_unfinalized_segments()  # promise 1 everywhere
        await settle(q)
        client = JournalNodeClient(cluster.address(0))
        try:
            req = request_info(jid, 7, 1)
            with pytest.raises(
                UnpromisedEpochError, match=r"epoch 7 was never promised.*last promise 1"
            ):
                await client.call("heartbeat", pb.HeartbeatRequestProto(req=req), 5)
            state = await client.call(
                "getJournalState", pb.GetJournalStateRequestProto(jid=journal_id(jid)), 5
            )
            assert state.last_promised_epoch == 1
        finally:
            await client.close()


async def test_a_node_that_missed_new_epoch_rejoins_at_the_next_segment(tmp_path: Path) -> None:
    async with JNCluster(tmp_path) as cluster:
        jid = cluster.new_jid()
        await cluster.format(jid)
        f = faults3()
        f[0].down = True  # misses new_epoch and recovery
        q = cluster.qjm(jid, f)
        try:
            await q.recover_unfinalized_segments()
            f[0].down = False
            stream = await q.start_log_segment(1)
            assert await write_txns(stream, 1, 5) == 5
            await q.loggers.wait_idle()
            assert not q.loggers.channels[0].out_of_sync
            assert q.loggers.channels[0].highest_acked_txid == 5
        finally:
            await settle(q)
        node = cluster.nodes[0]
        assert node is not None
        journal = await node.journal(jid)
        assert (journal.last_promised_epoch, journal.last_writer_epoch) == (1, 1)


async def test_a_node_whose_new_epoch_reply_was_lost_takes_the_next_segment(
    tmp_path: Path,
) -> None:
    """Design §J.11: jn0 promised epoch 1 but the reply never reached the writer."""
    async with JNCluster(tmp_path) as cluster:
        jid = cluster.new_jid()
        await cluster.format(jid)
        f = faults3()
        f[0].drop_answer("newEpoch", times=1)  # only the first reply is lost
        q = cluster.qjm(jid, f)
        try:
            await q.recover_unfinalized_segments()
            await q.loggers.wait_idle()
            node = cluster.nodes[0]
            assert node is not None
            assert (await node.journal(jid)).last_promised_epoch == 1  # promised, reply lost
            for first in (1, 6):
                stream = await q.start_log_segment(first)
                assert await write_txns(stream, first, 5) == first + 4
                await q.loggers.wait_idle()
                assert not q.loggers.channels[0].out_of_sync
                assert q.loggers.channels[0].highest_acked_txid == first + 4
                await q.finalize_log_segment(first, first + 4)
        finally:
            await settle(q)


async def test_rejoining_a_node_promised_to_a_newer_writer_is_a_fence(tmp_path: Path) -> None:
    """A node that missed our new_epoch but promised a newer writer refuses us (a real fence)."""
    async with JNCluster(tmp_path) as cluster:
        jid = cluster.new_jid()
        await cluster.format(jid)
        f = faults3()
        f[0].down = True
        q = cluster.qjm(jid, f)
        try:
            await q.recover_unfinalized_segments()  # epoch 1 on jn1, jn2
            client = JournalNodeClient(cluster.address(0))
            try:
                ns = q.loggers.channels[0].ns_info
                await client.call(
                    "newEpoch",
                    pb.NewEpochRequestProto(jid=journal_id(jid), ns_info=ns, epoch=5),
                    5,
                )
            finally:
                await client.close()
            f[0].down = False
            stream = await q.start_log_segment(1)
            assert await write_txns(stream, 1, 1) == 1
            await q.loggers.wait_idle()
            assert q.loggers.channels[0].out_of_sync
            with pytest.raises(EpochError, match=r"promised epoch 5.*our epoch 1"):
                await q.loggers.channels[0]._rejoin_if_unpromised()
        finally:
            await settle(q)


# -- A1: a reader never returns a fenced writer's unacknowledged edits -------------------------
async def a1_state(cluster: JNCluster, jid: str) -> None:
    """Writer 1 acks 1-5, 6-20 reaches jn0 only; writer 2 recovers without jn0, acks 6-10."""
    f1 = faults3()
    q1 = cluster.qjm(jid, f1)
    await q1.recover_unfinalized_segments()
    await write_segment(q1, 1, 5, tag="w1")
    stream = await q1.start_log_segment(6)
    f1[1].fail_from_txn(6)
    f1[2].fail_from_txn(6)
    with pytest.raises(QuorumError):
        await write_txns(stream, 6, 15, tag="w1")
    await settle(q1)
    f2 = faults3()
    f2[0].down = True  # partitioned (or restarting) during writer 2's recovery
    q2 = cluster.qjm(jid, f2)
    try:
        assert await q2.recover_unfinalized_segments() == 5
        f2[0].down = False  # jn0 is back before the next segment
        s2 = await q2.start_log_segment(6)  # jn0 refuses: its open segment holds 15 txns
        assert await write_txns(s2, 6, 5, tag="w2") == 10
        await q2.loggers.wait_idle()
        assert q2.loggers.channels[0].out_of_sync
        # jn0 learns committed=10 (an out-of-sync node still gets heartbeats).
        with contextlib.suppress(EpochError):  # a node that never promised epoch 2 refuses it
            await q2.loggers.channels[0].heartbeat()
    finally:
        await settle(q2)


async def test_a1_streamed_in_progress_read_skips_the_fenced_writers_edits(
    tmp_path: Path,
) -> None:
    async with JNCluster(tmp_path) as cluster:
        jid = cluster.new_jid()
        await cluster.format(jid)
        await a1_state(cluster, jid)
        # jn0 answers first: a reader that takes the first answers reads from it.
        f = faults3()
        f[1].delay_s = f[2].delay_s = 0.2
        async with reader_of(cluster, jid, f) as reader:
            ops = [op async for op in reader.read(1, in_progress_ok=True)]
        assert [op.txid for op in ops] == list(range(1, 11))
        for op in ops:
            tag = "w1" if op.txid <= 5 else "w2"
            assert op.body == payload(op.txid, tag), f"txid {op.txid}: {op.body!r}"


async def test_a1_cached_read_skips_the_fenced_writers_edits(tmp_path: Path) -> None:
    async with JNCluster(tmp_path) as cluster:
        jid = cluster.new_jid()
        await cluster.format(jid)
        await a1_state(cluster, jid)
        f = faults3()
        f[1].delay_s = f[2].delay_s = 0.2
        async with reader_of(cluster, jid, f) as reader:
            ops = await reader.read_journaled(6)
        assert [(op.txid, op.body) for op in ops] == [(t, payload(t, "w2")) for t in range(6, 11)]


# -- A2: no finalize past what was acknowledged ------------------------------------------------
async def test_a2_finalize_after_a_failed_flush_is_refused(tmp_path: Path) -> None:
    async with JNCluster(tmp_path) as cluster:
        jid = cluster.new_jid()
        await cluster.format(jid)
        f1 = faults3()
        q1 = cluster.qjm(jid, f1)
        try:
            await q1.recover_unfinalized_segments()
            await write_segment(q1, 1, 5, tag="w1")
            stream = await q1.start_log_segment(6)
            f1[1].fail_from_txn(6)
            f1[2].fail_from_txn(6)
            with pytest.raises(QuorumError):
                await write_txns(stream, 6, 15, tag="w1")  # 6-20 reaches jn0 only
            # A deposed writer, or a caller's `finally:`, still tries to finalize.
            with pytest.raises(QjmError, match=r"refusing to finalize segment 6-20.*failed"):
                await q1.finalize_log_segment(6, 20)
        finally:
            await settle(q1)
        assert "edits_0000000000000000006-0000000000000000020" not in cluster.segment_files(0, jid)
        # The next writer acks other 6-10 on jn1+jn2; a recovery that sees jn0 keeps them.
        f2 = faults3()
        f2[0].down = True
        q2 = cluster.qjm(jid, f2)
        try:
            assert await q2.recover_unfinalized_segments() == 5
            await write_segment(q2, 6, 5, tag="w2")
        finally:
            await settle(q2)
        assert await recover(cluster, jid) == 10
        values = check_one_value_per_txid(cluster, jid)
        assert [values[t] for t in range(6, 11)] == [payload(t, "w2") for t in range(6, 11)]


async def test_a2_finalize_beyond_the_acknowledged_txid_is_refused(tmp_path: Path) -> None:
    async with JNCluster(tmp_path) as cluster:
        jid = cluster.new_jid()
        await cluster.format(jid)
        f = faults3()
        q = cluster.qjm(jid, f)
        try:
            await q.recover_unfinalized_segments()
            stream = await q.start_log_segment(1)
            assert await write_txns(stream, 1, 5) == 5
            stream.write_op(OP_OPAQUE, payload(6))  # written, never flushed
            sent = [x.seen for x in f]
            with pytest.raises(QjmError, match=r"segment 1-6.*acknowledged.* 5"):
                await q.finalize_log_segment(1, 6)
            with pytest.raises(QjmError, match=r"segment 1-7.*acknowledged.* 5"):
                await q.finalize_log_segment(1, 7)
            assert [x.seen for x in f] == sent, "a refused finalize reached a node"
        finally:
            await settle(q)
        for i in range(3):
            assert cluster.segment_files(i, jid) == ["edits_inprogress_0000000000000000001"]


# -- A8: the writer's URI names the journal's members, each once ---------------------------------
async def test_a8_format_and_new_epoch_send_the_uris_members(tmp_path: Path) -> None:
    async with JNCluster(tmp_path) as cluster:
        jid = cluster.new_jid()
        sent: list[tuple[str, list[str]]] = []

        def record(method: str, request: Any) -> None:
            if method in ("format", "newEpoch"):
                sent.append((method, list(request.members)))

        f = faults3()
        for x in f:
            x.before = record
        q = cluster.qjm(jid, f)
        try:
            await q.format(new_namespace_info(cluster_id="CID-test", namespace_id=12345))
            await q.recover_unfinalized_segments()
        finally:
            await settle(q)
        members = sorted(cluster.address(i) for i in range(3))
        assert sent == [("format", members)] * 3 + [("newEpoch", members)] * 3


async def test_a8_one_node_under_two_names_is_refused(tmp_path: Path) -> None:
    async with JNCluster(tmp_path) as cluster:
        jid = cluster.new_jid()
        await cluster.format(jid)
        p0, p1 = cluster.rpc_ports[0], cluster.rpc_ports[1]
        uri = f"qjournal://127.0.0.1:{p0};localhost:{p0};127.0.0.1:{p1}/{jid}"
        q = QuorumJournalManager(uri, settings=FAST_SETTINGS)
        try:
            with pytest.raises(
                ConfigError,
                match=rf"names one JournalNode twice: 127.0.0.1:{p0} and localhost:{p0} are "
                "the same node",
            ):
                await q.recover_unfinalized_segments()
        finally:
            await q.close()
        for i in range(3):  # nobody promised anything
            node = cluster.nodes[i]
            assert node is not None
            assert (await node.journal(jid)).last_promised_epoch == 0


def test_a8_uri_with_one_address_twice_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"names a JournalNode twice \(Host:1\)"):
        parse_qjournal_uri("qjournal://host:1;other:2;Host:1/ns1")
    with pytest.raises(ConfigError, match="names a JournalNode twice"):
        parse_qjournal_uri("qjournal://host:8485;host/ns1")  # 8485 is the default port


# -- C: a node formatted for another namespace is one bad node, not a veto ----------------------
@pytest.mark.parametrize("bad", [0, 1, 2])
async def test_c_a_node_of_another_namespace_does_not_block_the_writer(
    tmp_path: Path, bad: int, caplog: pytest.LogCaptureFixture
) -> None:
    async with JNCluster(tmp_path) as cluster:
        jid = cluster.new_jid()
        ns = await cluster.format(jid)
        other = new_namespace_info(cluster_id="CID-other", namespace_id=999)
        node = cluster.nodes[bad]
        assert node is not None
        await node.run(jid, lambda j: j.format(NamespaceInfo.from_proto(other), True))
        f = faults3()
        if bad != 0:
            f[0].delay_s = 0.1  # the bad node is among the first majority to answer
        q = cluster.qjm(jid, f)  # no namespace given: the writer discovers it
        try:
            await q.recover_unfinalized_segments()
            assert q.ns_info is not None
            assert q.ns_info.storage_info.namespace_id == ns.storage_info.namespace_id
            stream = await q.start_log_segment(1)
            assert await write_txns(stream, 1, 3) == 3
        finally:
            await settle(q)
        assert f"{cluster.address(bad)}" in caplog.text and "namespace" in caplog.text
        assert (await node.journal(jid)).ns_info == NamespaceInfo.from_proto(other)


# -- design §J.10: a stale node and an away node ------------------------------------------------
async def stale_jn0_state(cluster: JNCluster, jid: str) -> None:
    """Writer 1 finalizes 1-5 everywhere; writer 2, without jn0, writes 6-10 (committed) on
    jn1 and jn2 in an open segment: jn0 stays at the older writer's epoch."""
    q1 = cluster.qjm(jid)
    await q1.recover_unfinalized_segments()
    await write_segment(q1, 1, 5, tag="w1")
    await settle(q1)
    f2 = faults3()
    f2[0].down = True
    q2 = cluster.qjm(jid, f2)
    try:
        assert await q2.recover_unfinalized_segments() == 5
        stream = await q2.start_log_segment(6)
        assert await write_txns(stream, 6, 5, tag="w2") == 10
        await q2.loggers.wait_idle()
        await q2.loggers.channels[1].heartbeat()  # jn1 and jn2 learn committed=10
        await q2.loggers.channels[2].heartbeat()
    finally:
        await settle(q2)


@pytest.mark.slow
async def test_read_names_committed_txids_only_one_current_node_holds(tmp_path: Path) -> None:
    """Finding 6: jn0 stale, jn1 away, jn2 current with committed 10: no silent prefix."""
    async with JNCluster(tmp_path) as cluster:
        jid = cluster.new_jid()
        await cluster.format(jid)
        await stale_jn0_state(cluster, jid)
        await cluster.stop_node(1)
        async with reader_of(cluster, jid) as reader:
            with pytest.raises(IncompleteReadError, match=r"txids 6-10 .* committed"):
                _ = [op async for op in reader.read(1, in_progress_ok=True)]
            # A read bounded below the missing range still succeeds.
            ops = [op async for op in reader.read(1, in_progress_ok=True, to_txid=5)]
        assert [(op.txid, op.body) for op in ops] == [(t, payload(t, "w1")) for t in range(1, 6)]


async def test_tail_streams_when_too_few_current_nodes_answer_from_memory(
    tmp_path: Path,
) -> None:
    """Finding 5: jn0 stale, jn1 restarted (nothing cached), jn2 current: the tail streams."""
    async with JNCluster(tmp_path) as cluster:
        jid = cluster.new_jid()
        await cluster.format(jid)
        await stale_jn0_state(cluster, jid)
        await cluster.restart_node(1)
        async with reader_of(cluster, jid) as reader:
            with pytest.raises(QuorumError):
                await reader.read_journaled(6)
            tail = reader.tail(6, wait_ms=100)
            try:
                batch = await asyncio.wait_for(anext(tail), 20)
            finally:
                await tail.aclose()
        assert [(op.txid, op.body) for op in batch] == [(t, payload(t, "w2")) for t in range(6, 11)]


async def test_read_takes_the_majoritys_end_of_a_finalized_segment(tmp_path: Path) -> None:
    """One node's finalized copy ending elsewhere (a deposed writer's direct finalize) must
    neither be read nor stop every read while a majority agrees."""
    async with JNCluster(tmp_path) as cluster:
        jid = cluster.new_jid()
        await cluster.format(jid)
        q = cluster.qjm(jid)
        try:
            await q.recover_unfinalized_segments()
            await write_segment(q, 1, 5)
        finally:
            await settle(q)
        odd = cluster.current_dir(0, jid)
        whole = odd / finalized_name(1, 5)
        _truncate_after(whole, 4)
        whole.rename(odd / finalized_name(1, 4))
        async with reader_of(cluster, jid) as reader:
            ops = [op async for op in reader.read(1)]
        assert [(op.txid, op.body) for op in ops] == [(t, payload(t)) for t in range(1, 6)]
        # Without a majority for one end (4, 5 and 3) the read still refuses to choose.
        (cluster.current_dir(2, jid) / finalized_name(1, 5)).rename(
            cluster.current_dir(2, jid) / finalized_name(1, 3)
        )
        _truncate_after(cluster.current_dir(2, jid) / finalized_name(1, 3), 3)
        async with reader_of(cluster, jid) as reader:
            with pytest.raises(QjmError, match="disagree on where finalized segment 1 ends"):
                _ = [op async for op in reader.read(1)]
