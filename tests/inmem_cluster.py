"""Helpers for tests on JournalNodes in this process (qjm.testing.in_memory).

A formatted three-node cluster, a writer on it, ops whose bodies name their txid and
writer, and the check that every txid has one value across the nodes.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

from qjm.client.admin import new_namespace_info
from qjm.client.output_stream import QuorumOutputStream
from qjm.client.quorum_journal_manager import QuorumJournalManager
from qjm.editlog.framing import OP_OPAQUE
from qjm.testing.in_memory import InMemoryCluster
from qjm_cluster import FAST_SETTINGS

SETTINGS = FAST_SETTINGS
JID = "inmem"


def payload(txid: int, tag: str = "") -> bytes:
    """The body of a test op: names its txid (and writer), so each value is checkable."""
    return f"tx {txid} {tag}".encode()


@contextlib.asynccontextmanager
async def formatted_cluster(tmp_path: Path) -> AsyncIterator[InMemoryCluster]:
    """Three in-memory JournalNodes with journal JID formatted."""
    async with InMemoryCluster(tmp_path) as c:
        q = qjm(c)
        try:
            await q.format(new_namespace_info(cluster_id="CID-mem", namespace_id=4242))
        finally:
            await q.close()
        yield c


def qjm(c: InMemoryCluster, **kw: object) -> QuorumJournalManager:
    """A writer on the in-memory cluster."""
    return QuorumJournalManager(c.uri(JID), None, SETTINGS, client_factory=c.client, **kw)  # type: ignore[arg-type]


async def write_txns(stream: QuorumOutputStream, first: int, n: int, tag: str = "") -> int:
    """Write n ops from txid first as one batch and sync it; returns the acked txid."""
    for txid in range(first, first + n):
        assert stream.write_op(OP_OPAQUE, payload(txid, tag)) == txid
    return await stream.flush()


async def idle(q: QuorumJournalManager) -> None:
    """Wait until every node answered every call the writer sent so far."""
    await asyncio.wait_for(q.loggers.wait_idle(), 10)


async def settle(q: QuorumJournalManager) -> None:
    """Let every call already sent reach its node, then close the writer."""
    try:
        await asyncio.wait_for(q.loggers.wait_idle(), 10)
    finally:
        await q.close()


async def writer(c: InMemoryCluster, expect_recovered: int | None = None) -> QuorumJournalManager:
    """A new writer that fenced and recovered."""
    q = qjm(c)
    got = await q.recover_unfinalized_segments()
    if expect_recovered is not None:
        assert got == expect_recovered
    return q


async def recover(c: InMemoryCluster) -> int:
    """A new writer recovers and settles; returns the recovered last txid."""
    q = qjm(c)
    try:
        return await q.recover_unfinalized_segments()
    finally:
        await settle(q)


async def first_segment(c: InMemoryCluster, end: int = 100) -> QuorumJournalManager:
    """Writer 1 (epoch 1) with segment 1-end finalized on every node."""
    q = await writer(c, 0)
    assert q.epoch == 1
    stream = await q.start_log_segment(1)
    assert await write_txns(stream, 1, end) == end
    await stream.close()
    await q.finalize_log_segment(1, end)
    return q


def finalized(c: InMemoryCluster, i: int, start: int, end: int, tag: str = "") -> None:
    """Node i holds a finalized segment start-end whose ops are the written ones."""
    segs = c.segments(i, JID)
    assert (start, end) in segs, f"jn{i}: {c.segment_names(i, JID)}"
    ops = segs[(start, end)]
    assert sorted(ops) == list(range(start, end + 1))
    assert ops[end] == payload(end, tag)


def one_value_per_txid(c: InMemoryCluster) -> dict[int, bytes]:
    """Every finalized segment is whole and every txid has one value across the nodes."""
    seen: dict[int, tuple[int, bytes]] = {}
    for i in range(c.n):
        for (start, end), ops in c.segments(i, JID).items():
            assert end is not None and sorted(ops) == list(range(start, end + 1)), (i, start, end)
            for txid, body in ops.items():
                other = seen.setdefault(txid, (i, body))
                assert other[1] == body, f"txid {txid}: jn{other[0]} {other[1]!r}, jn{i} {body!r}"
    return {t: v for t, (_, v) in seen.items()}
