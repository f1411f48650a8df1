"""Tailing committed edits while a real writer writes (in-process JournalNodes)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from qjm.client.quorum_call import QuorumError
from qjm.client.reader import QuorumJournalReader
from qjm.client.uri import parse_qjournal_uri
from qjm.editlog.framing import RawOp
from qjm.testing.faults import NodeFaults
from qjm_cluster import FAST_SETTINGS, JNCluster, payload, settle, write_txns

pytestmark = pytest.mark.timeout(90)


def reader_of(cluster: JNCluster, jid: str) -> QuorumJournalReader:
    """A reader of every node of the cluster."""
    return QuorumJournalReader(parse_qjournal_uri(cluster.uri(jid)), FAST_SETTINGS)


async def test_an_idle_writers_last_batch_becomes_visible_at_once(tmp_path: Path) -> None:
    async with JNCluster(tmp_path) as cluster:
        jid = cluster.new_jid()
        await cluster.format(jid)
        q = cluster.qjm(jid)
        reader = reader_of(cluster, jid)
        try:
            await q.recover_unfinalized_segments()
            stream = await q.start_log_segment(1)
            await write_txns(stream, 1, 5)  # then the writer goes idle
            # The long poll may wait 20 s; the batch must show up long before that.
            ops = await asyncio.wait_for(reader.read_journaled(1, wait_ms=20_000), 10)
            assert [op.txid for op in ops] == [1, 2, 3, 4, 5]
        finally:
            await reader.close()
            await settle(q)


async def test_tailing_with_one_slow_and_one_dead_node(tmp_path: Path) -> None:
    async with JNCluster(tmp_path) as cluster:
        jid = cluster.new_jid()
        await cluster.format(jid)
        faults = [NodeFaults(), NodeFaults(), NodeFaults(delay_s=0.005)]
        q = cluster.qjm(jid, faults)
        reader = reader_of(cluster, jid)
        try:
            await q.recover_unfinalized_segments()
            await cluster.stop_node(0)  # dead for the writer and the reader
            stream = await q.start_log_segment(1)
            total, per_batch = 600, 6
            acked = 0

            async def writer() -> None:
                nonlocal acked
                for first in range(1, total + 1, per_batch):
                    acked = await write_txns(stream, first, per_batch)

            task = asyncio.create_task(writer())
            seen: list[RawOp] = []
            tail = reader.tail(1, wait_ms=500)
            while len(seen) < total:
                batch = await asyncio.wait_for(tail.__anext__(), 20)
                assert batch[-1].txid <= acked, "the tailer saw a txid before it was acknowledged"
                seen.extend(batch)
            await tail.aclose()
            await task
            assert [op.txid for op in seen] == list(range(1, total + 1))
            assert all(op.body == payload(op.txid) for op in seen)
        finally:
            await reader.close()
            await settle(q)


@pytest.mark.slow
async def test_no_unacknowledged_tail_is_read_across_a_failover(tmp_path: Path) -> None:
    async with JNCluster(tmp_path) as cluster:
        jid = cluster.new_jid()
        await cluster.format(jid)
        faults = [NodeFaults(), NodeFaults(), NodeFaults()]
        old = cluster.qjm(jid, faults)
        reader = reader_of(cluster, jid)
        try:
            await old.recover_unfinalized_segments()
            stream = await old.start_log_segment(1)
            await write_txns(stream, 1, 5, "old")
            faults[1].fail_from_txn(6)
            faults[2].fail_from_txn(6)
            with pytest.raises(QuorumError):
                await write_txns(stream, 6, 3, "old")  # 6-8 reach jn0 only
            assert await reader.read_journaled(6) == []
            await settle(old)

            await cluster.stop_node(0)  # the node with the unacknowledged tail is away
            new = cluster.qjm(jid)
            try:
                await new.recover_unfinalized_segments()
                stream = await new.start_log_segment(6)
                await write_txns(stream, 6, 2, "new")
                ops = await asyncio.wait_for(reader.read_journaled(6, wait_ms=10_000), 10)
                assert [(op.txid, op.body) for op in ops] == [
                    (6, payload(6, "new")),
                    (7, payload(7, "new")),
                ]
                streamed = [op async for op in reader.read(1, in_progress_ok=True)]
                assert [op.body for op in streamed] == [
                    *(payload(t, "old") for t in range(1, 6)),
                    *(payload(t, "new") for t in (6, 7)),
                ]
            finally:
                await settle(new)
        finally:
            await reader.close()
