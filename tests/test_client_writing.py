"""Writing through the quorum (design §J.14) and the per-node channel (TestIPCLoggerChannel)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest

from qjm.client.journalnode_client import JournalNodeClient
from qjm.client.logger_channel import HEARTBEAT_INTERVAL_S, LoggerTooFarBehindError, RpcClient
from qjm.client.output_stream import QuorumOutputStream
from qjm.client.quorum_call import QuorumError
from qjm.client.quorum_journal_manager import QuorumJournalManager
from qjm.config import QJournalSettings
from qjm.editlog.framing import OP_OPAQUE
from qjm.journalnode.syncer import JournalNodeSyncer
from qjm.protocol.namespace import namespace_identity
from qjm.testing.faults import Gate, InjectedFault, NodeFaults
from qjm_cluster import (
    FAST_SETTINGS,
    JNCluster,
    check_one_value_per_txid,
    payload,
    settle,
    write_segment,
    write_txns,
)

pytestmark = pytest.mark.timeout(60)


async def started(cluster: JNCluster, faults: list[NodeFaults] | None = None, **kw: object):  # type: ignore[no-untyped-def]
    jid = cluster.new_jid()
    await cluster.format(jid)
    q = cluster.qjm(jid, faults, **kw)  # type: ignore[arg-type]
    await q.recover_unfinalized_segments()
    return jid, q


async def test_single_writer_segments_are_finalized_on_every_node(tmp_path: Path) -> None:
    async with JNCluster(tmp_path) as cluster:
        jid, q = await started(cluster)
        try:
            await write_segment(q, 1, 3)
            await write_segment(q, 4, 1)
        finally:
            await settle(q)
        for i in range(3):
            assert sorted(cluster.read_segments(i, jid)) == [(1, 3), (4, 4)]
        assert str(q).startswith("QJM to [127.0.0.1:")


async def test_a_quorum_of_two_suffices(tmp_path: Path) -> None:
    async with JNCluster(tmp_path) as cluster:
        jid = cluster.new_jid()
        await cluster.format(jid)
        await cluster.stop_node(1)
        q = cluster.qjm(jid)
        try:
            await q.recover_unfinalized_segments()
            await write_segment(q, 1, 10)
        finally:
            await settle(q)
        for i in (0, 2):
            assert (1, 10) in cluster.read_segments(i, jid)


async def test_writes_fail_without_a_quorum(tmp_path: Path) -> None:
    async with JNCluster(tmp_path) as cluster:
        faults = [NodeFaults() for _ in range(3)]
        _jid, q = await started(cluster, faults)
        try:
            stream = await q.start_log_segment(1)
            await write_txns(stream, 1, 2)
            faults[0].down = faults[1].down = True
            with pytest.raises(QuorumError, match="quorum size 2/3"):
                await write_txns(stream, 3, 1)
            assert stream.failed is not None
            with pytest.raises(QuorumError):
                stream.write_op(OP_OPAQUE, b"no")  # a broken stream takes nothing more
        finally:
            await settle(q)


async def test_one_hanging_node_adds_no_latency(tmp_path: Path) -> None:
    async with JNCluster(tmp_path) as cluster:
        faults = [NodeFaults() for _ in range(3)]
        jid = cluster.new_jid()
        await cluster.format(jid)
        q = cluster.qjm(jid, faults)
        hang: Gate | None = None
        try:
            await q.recover_unfinalized_segments()
            hang = faults[2].hold()  # answer the epoch calls, then hang from the segment on
            stream = await q.start_log_segment(1)
            for txid in range(1, 51):
                stream.write_op(OP_OPAQUE, payload(txid))
                await stream.flush()
            # 50 acknowledged batches while the hanging node has not answered once.
            ch = q.loggers.channels[2]
            assert ch.highest_acked_txid == 0
            assert ch.queued_bytes > 0
            assert ch.metrics().lag_txns == 50  # a quorum acked 50, this node nothing
            assert ch.metrics().lag_ms > 0
        finally:
            if hang is not None:
                hang.open()
            await settle(q)


async def test_failed_node_is_out_of_sync_until_the_next_segment(tmp_path: Path) -> None:
    async with JNCluster(tmp_path) as cluster:
        faults = [NodeFaults() for _ in range(3)]
        jid, q = await started(cluster, faults)
        try:
            stream = await q.start_log_segment(1)
            await write_txns(stream, 1, 2)
            faults[2].fail("journal", when=lambda r: r.first_txid == 3)
            await write_txns(stream, 3, 1)  # fails on JN2 only
            # JN2's failure may come after the quorum's answer
            await asyncio.wait_for(q.loggers.wait_idle(), 10)
            ch = q.loggers.channels[2]
            assert ch.out_of_sync and ch.metrics().out_of_sync
            sent: list[str] = []  # the calls sent to JN2 from here on, as they start
            faults[2].before = lambda method, request: sent.append(method)
            # (a heartbeat may already have reported batch 1-2's commit while in sync)
            started_at = time.monotonic()
            for txid in range(4, 24):
                await write_txns(stream, txid, 1)
            took = time.monotonic() - started_at
            await asyncio.wait_for(q.loggers.wait_idle(), 10)
            # No journal() reached it again; heartbeats at most once a second.
            assert sent.count("journal") == 0
            out_of_sync_heartbeats = sent.count("heartbeat")
            assert 1 <= out_of_sync_heartbeats <= 1 + int(took / HEARTBEAT_INTERVAL_S)
            end = await stream.close()
            await q.finalize_log_segment(1, end)
            # It missed 3-23 but takes segment 24 (as in HDFS) ...
            await write_segment(q, end + 1, 3)
            assert not ch.out_of_sync
            assert (1, 23) not in cluster.read_segments(2, jid)
            # ... and the syncer installs what it missed.
            node = cluster.nodes[2]
            assert node is not None
            peers = [cluster.address(0), cluster.address(1)]  # a majority holds it
            assert await JournalNodeSyncer(node, peers, 1.0).sync_round() == 1
        finally:
            await settle(q)
        segs = cluster.read_segments(2, jid)
        assert (1, 23) in segs and (24, 26) in segs
        check_one_value_per_txid(cluster, jid)


async def test_queue_bound_drops_edits_for_a_stuck_node(tmp_path: Path) -> None:
    async with JNCluster(tmp_path) as cluster:
        faults = [NodeFaults() for _ in range(3)]
        settings = QJournalSettings(**{**vars(FAST_SETTINGS), "queued_edits_limit_mb": 1})
        _jid, q = await started(cluster, faults, settings=settings)
        hang: Gate | None = None
        try:
            stream = await q.start_log_segment(1)
            hang = faults[2].hold()
            body = b"x" * 100_000
            for _ in range(30):  # 3 MB, three times the bound
                stream.write_op(OP_OPAQUE, body)
                await stream.flush()
            ch = q.loggers.channels[2]
            assert ch.queued_bytes <= 1024 * 1024 + 200_000
            fut = ch.send_edits(1, stream.next_txid, 1, b"x" * 2_000_000)
            with pytest.raises(LoggerTooFarBehindError, match="too far behind"):
                await fut
            stream.write_op(OP_OPAQUE, body)
            assert await stream.flush() == 31  # the other two keep going
            hang.open()
            await asyncio.wait_for(q.loggers.wait_idle(), 10)
            assert ch.out_of_sync  # batches were dropped for it: it waits for the next segment
            assert ch.queued_bytes == 0
        finally:
            if hang is not None:
                hang.open()
            await settle(q)


async def test_ipc_serials_ascend_and_committed_txid_is_piggybacked(tmp_path: Path) -> None:
    async with JNCluster(tmp_path) as cluster:
        seen: list[tuple[str, int, int | None]] = []
        faults = [NodeFaults() for _ in range(3)]

        def record(method: str, request: object) -> None:
            req = getattr(request, "req", None)
            if req is not None:
                committed = req.committed_txid if req.HasField("committed_txid") else None
                seen.append((method, req.ipc_serial, committed))

        faults[0].before = record
        _jid, q = await started(cluster, faults)
        try:
            stream = await q.start_log_segment(1)
            await write_txns(stream, 1, 2)
            await write_txns(stream, 3, 2)
            await stream.close()
            await q.finalize_log_segment(1, 4)
        finally:
            await settle(q)
        serials = [s for _, s, _ in seen]
        assert serials == sorted(serials) and len(set(serials)) == len(serials)
        assert seen[-1] == ("finalizeLogSegment", serials[-1], 4)
        journal_commits = [c for m, _, c in seen if m == "journal"]
        # A request carries the committed txid the writer knows when it is sent from the
        # node's queue. Batch 1 goes out before anything is committed, unless node 0 lags
        # the quorum (its startLogSegment answered after the other two acknowledged batch 1,
        # or even batch 2): then it carries 2, or 4. Batch 2 is written only after batch 1
        # was acknowledged, so it carries 2, or 4 when node 0 lags the quorum again.
        assert len(journal_commits) == 2
        assert journal_commits[0] in (None, 2, 4)
        assert journal_commits[1] in (2, 4)
        assert journal_commits[0] is None or journal_commits[0] <= journal_commits[1]


async def test_group_commit_with_64_concurrent_writers(tmp_path: Path) -> None:
    async with JNCluster(tmp_path) as cluster:
        jid, q = await started(cluster)
        try:
            stream = await q.start_log_segment(1)

            async def writer(w: int) -> list[int]:
                mine = []
                for k in range(20):
                    txid = stream.write_op(OP_OPAQUE, f"w{w} k{k}".encode())
                    await stream.sync(txid)
                    assert stream.acked_txid >= txid
                    mine.append(txid)
                return mine

            results = await asyncio.gather(*(writer(w) for w in range(64)))
            end = await stream.close()
            assert end == 64 * 20
            assert sorted(t for r in results for t in r) == list(range(1, end + 1))
            assert stream.batches_sent < end / 4  # ops shared round trips
            await q.finalize_log_segment(1, end)
        finally:
            await settle(q)
        values = check_one_value_per_txid(cluster, jid)
        assert len(values) == 64 * 20


async def test_metrics_and_format_helpers(tmp_path: Path) -> None:
    async with JNCluster(tmp_path) as cluster:
        jid = cluster.new_jid()
        q = cluster.qjm(jid)
        try:
            assert not await q.has_some_data()
        finally:
            await settle(q)
        ns = await cluster.format(jid)
        q = cluster.qjm(jid)
        try:
            assert await q.has_some_data()
            found = await q.discover_namespace()
            assert namespace_identity(found) == namespace_identity(ns)
            await q.recover_unfinalized_segments()
            await write_segment(q, 1, 5)
            await asyncio.wait_for(q.loggers.wait_idle(), 10)
            for m in q.loggers.metrics():
                assert not m.out_of_sync and m.lag_txns == 0 and m.queued_bytes == 0
                assert m.highest_acked_txid == 5
                assert m.rpc["journal"].calls == 1 and m.rpc["journal"].mean_s > 0
        finally:
            await settle(q)


class _HoldFirstBatchAnswer:
    """Holds the answer to the batch at txid 1 until the batch at txid 2 was sent."""

    def __init__(self, inner: RpcClient, second_sent: asyncio.Event) -> None:
        self.inner = inner
        self.address = inner.address
        self.second_sent = second_sent

    async def call(self, method: str, request: Any, deadline: float) -> Any:
        if method == "journal" and request.first_txid == 2:
            self.second_sent.set()
        resp = await self.inner.call(method, request, deadline)
        if method == "journal" and request.first_txid == 1:
            # Without pipelining the second batch waits for this answer: a deadlock.
            await asyncio.wait_for(self.second_sent.wait(), 5)
        return resp

    async def close(self) -> None:
        await self.inner.close()


async def _cut_batches(stream: QuorumOutputStream, n: int) -> None:
    """Let the stream cut its scheduled batch (bounded)."""
    for _ in range(100):
        if stream.batches_sent >= n:
            return
        await asyncio.sleep(0)
    raise AssertionError(f"the stream cut {stream.batches_sent} batches, expected {n}")


async def test_the_next_batch_is_sent_while_the_previous_one_syncs(tmp_path: Path) -> None:
    async with JNCluster(tmp_path) as cluster:
        jid = cluster.new_jid()
        await cluster.format(jid)
        events: dict[str, asyncio.Event] = {}

        def factory(addr: str) -> RpcClient:
            events[addr] = asyncio.Event()
            return _HoldFirstBatchAnswer(JournalNodeClient(addr), events[addr])

        q = QuorumJournalManager(cluster.uri(jid), None, FAST_SETTINGS, client_factory=factory)
        try:
            await q.recover_unfinalized_segments()
            stream = await q.start_log_segment(1)
            first = asyncio.ensure_future(stream.sync(stream.write_op(OP_OPAQUE, payload(1))))
            await _cut_batches(stream, 1)
            second = asyncio.ensure_future(stream.sync(stream.write_op(OP_OPAQUE, payload(2))))
            await _cut_batches(stream, 2)
            await asyncio.wait_for(asyncio.gather(first, second), 10)
            # A quorum answered; the third node may still be finishing startLogSegment.
            await asyncio.wait_for(asyncio.gather(*(e.wait() for e in events.values())), 10)
            assert stream.acked_txid == 2
            await q.loggers.wait_idle()
            for ch in q.loggers.channels:
                assert not ch.out_of_sync and ch.highest_acked_txid == 2
            await stream.close()
            await q.finalize_log_segment(1, 2)
        finally:
            await settle(q)
        for i in range(3):
            assert cluster.read_segments(i, jid)[(1, 2)] == {1: payload(1), 2: payload(2)}


class _FailFirstBatchOnceSecondSent:
    """Fails the batch at txid 1 (never sending it) once the batch at txid 2 was sent."""

    def __init__(self, inner: RpcClient) -> None:
        self.inner = inner
        self.address = inner.address
        self.second_sent = asyncio.Event()
        self.journal_calls = 0

    async def call(self, method: str, request: Any, deadline: float) -> Any:
        if method == "journal":
            self.journal_calls += 1
            if request.first_txid == 2:
                self.second_sent.set()
            elif request.first_txid == 1:
                await asyncio.wait_for(self.second_sent.wait(), 5)
                raise InjectedFault(f"{self.address}: Injected failure of the batch at txid 1")
        return await self.inner.call(method, request, deadline)

    async def close(self) -> None:
        await self.inner.close()


async def test_a_failed_batch_fails_the_batches_pipelined_behind_it(tmp_path: Path) -> None:
    async with JNCluster(tmp_path) as cluster:
        jid = cluster.new_jid()
        await cluster.format(jid)
        faulty: list[_FailFirstBatchOnceSecondSent] = []

        def factory(addr: str) -> RpcClient:
            if addr != cluster.address(2):
                return JournalNodeClient(addr)
            faulty.append(_FailFirstBatchOnceSecondSent(JournalNodeClient(addr)))
            return faulty[-1]

        q = QuorumJournalManager(cluster.uri(jid), None, FAST_SETTINGS, client_factory=factory)
        try:
            await q.recover_unfinalized_segments()
            stream = await q.start_log_segment(1)
            first = asyncio.ensure_future(stream.sync(stream.write_op(OP_OPAQUE, payload(1))))
            await _cut_batches(stream, 1)
            second = asyncio.ensure_future(stream.sync(stream.write_op(OP_OPAQUE, payload(2))))
            await _cut_batches(stream, 2)
            await asyncio.wait_for(asyncio.gather(first, second), 10)  # the others suffice
            await asyncio.wait_for(q.loggers.wait_idle(), 10)
            ch = q.loggers.channels[2]
            # The batch at txid 2 went out while the one at txid 1 was pending; the node
            # refused it (a gap), and the channel is out of sync until the next segment.
            assert faulty[0].journal_calls == 2
            assert ch.out_of_sync and ch.highest_acked_txid == 0
            assert ch.metrics().rpc["journal"].failures == 2
            end = await stream.close()
            await q.finalize_log_segment(1, end)
            await write_segment(q, end + 1, 2)
            assert not ch.out_of_sync and ch.highest_acked_txid == end + 2
        finally:
            await settle(q)
        assert (1, 2) not in cluster.read_segments(2, jid)
        assert (3, 4) in cluster.read_segments(2, jid)
        check_one_value_per_txid(cluster, jid)
