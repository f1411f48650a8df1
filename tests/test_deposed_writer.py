"""A deposed writer that still calls the JournalNode API cannot make its tail win (§J.3, §J.4).

Writer 1 is fenced by writer 2 on jn1 and jn2, but jn0 never hears of writer 2. Writer 2
acknowledges txids 6-10 of its own; writer 1's unacknowledged 6-10 sit on jn0. Writer 1
then calls finalizeLogSegment itself, bypassing every check of our client:

- reporting what it really had committed, jn0 refuses (a segment is finalized only up to
  a txid its writer reports committed);
- lying about it, jn0 finalizes, but records that epoch 1 decided the copy; recovery, the
  readers and the syncer then rank it below writer 2's copies, whose bytes win.

The nodes run in this process over the in-memory transport (qjm.testing.in_memory).
"""

from __future__ import annotations

from typing import Any

import pytest

from inmem_cluster import (
    JID,
    SETTINGS,
    one_value_per_txid,
    payload,
    qjm,
    recover,
    settle,
    write_txns,
)
from qjm.client.logger_channel import request_info
from qjm.client.quorum_call import QuorumError
from qjm.client.quorum_journal_manager import QuorumJournalManager
from qjm.client.reader import QuorumJournalReader
from qjm.client.uri import parse_qjournal_uri
from qjm.protocol import qjournal_pb2 as pb
from qjm.protocol.errors import FinalizeRefusedError
from qjm.testing.in_memory import InMemoryCluster

pytestmark = pytest.mark.timeout(60)


def epoch_of(request: Any) -> int:
    """The epoch a request carries (0 for calls without one)."""
    if hasattr(request, "req"):
        return int(request.req.epoch)
    return int(getattr(request, "epoch", 0))


async def writer_2_takes_over(
    c: InMemoryCluster, finalized_on_jn1: bool = True
) -> QuorumJournalManager:
    """Return writer 1, deposed: 1-5 everywhere, its unacked 6-10 on jn0 only; writer 2
    (which jn0 never hears of) acked its own 6-10 on jn1 and jn2 and finalized them on jn1
    only (or did not finalize at all) before it died."""
    w1 = qjm(c)
    assert await w1.recover_unfinalized_segments() == 0
    stream = await w1.start_log_segment(1)
    await write_txns(stream, 1, 5, "w1")
    await stream.close()
    await w1.finalize_log_segment(1, 5)
    stream = await w1.start_log_segment(6)
    for i in (1, 2):
        c.faults[i].fail_from_txn(6)
    with pytest.raises(QuorumError):
        await write_txns(stream, 6, 5, "w1")  # lands on jn0 only: never acknowledged
    await w1.loggers.wait_idle()
    for i in (1, 2):
        c.faults[i].clear()
    c.faults[0].fail(when=lambda r: epoch_of(r) >= 2)  # jn0 never hears of writer 2
    w2 = qjm(c)
    assert await w2.recover_unfinalized_segments() == 5
    stream = await w2.start_log_segment(6)
    assert await write_txns(stream, 6, 5, "w2") == 10
    await stream.close()
    if finalized_on_jn1:
        c.faults[2].fail("finalizeLogSegment", times=1)
        with pytest.raises(QuorumError):
            await w2.finalize_log_segment(6, 10)  # jn1 only: short of a majority
    await settle(w2)  # (without a finalize, a heartbeat reports 10 committed)
    c.faults[0].clear()
    return w1


async def lying_finalize(c: InMemoryCluster, finalized_on_jn1: bool = True) -> None:
    """writer_2_takes_over, then writer 1's own call on jn0 finalizes 6-10 there, claiming
    its whole tail committed."""
    w1 = await writer_2_takes_over(c, finalized_on_jn1)
    try:
        jn0 = w1.loggers.channels[0]
        jn0.set_committed_txid(10)
        await jn0.finalize_log_segment(6, 10)
    finally:
        await w1.close()


def values_6_10(c: InMemoryCluster, i: int) -> dict[int, bytes]:
    segs = c.segments(i, JID, finalized_only=False)
    return {t: v for (s, _), ops in segs.items() if s == 6 for t, v in ops.items()}


async def test_a_deposed_writer_cannot_finalize_what_it_had_not_committed(
    mem_cluster: InMemoryCluster,
) -> None:
    c = mem_cluster
    w1 = await writer_2_takes_over(c)
    try:
        # Its channel reports txid 5 committed, the last one a majority acknowledged.
        with pytest.raises(FinalizeRefusedError, match="only up to a txid its writer reports"):
            await w1.loggers.channels[0].finalize_log_segment(6, 10)
        assert (6, 10) not in c.segments(0, JID)
        # A call that reports nothing committed is refused too.
        jn0 = c.client(c.addresses[0])
        bare = pb.FinalizeLogSegmentRequestProto(
            req=request_info(JID, 1, 10_000), start_txid=6, end_txid=10
        )
        with pytest.raises(FinalizeRefusedError, match="reports no committed txid"):
            await jn0.call("finalizeLogSegment", bare, 5)
        assert (6, 10) not in c.segments(0, JID)
    finally:
        await w1.close()
    assert await recover(c) == 10
    for txid, value in one_value_per_txid(c).items():
        if txid >= 6:
            assert value == payload(txid, "w2")


async def test_a_deposed_finalize_of_the_same_end_loses_the_next_recovery(
    mem_cluster: InMemoryCluster,
) -> None:
    c = mem_cluster
    await lying_finalize(c)
    assert (6, 10) in c.segments(0, JID)  # finalized there, decided in epoch 1
    assert await c.node(0).run(JID, lambda j: j.decided_epoch(6, 10)) == 1
    # The next writer hears jn0 and jn2 only: jn0's finalized copy against jn2's open
    # copy of writer 2, both ending at 10.
    await c.crash(1)
    assert await recover(c) == 10
    for i in (0, 2):
        assert values_6_10(c, i) == {t: payload(t, "w2") for t in range(6, 11)}, i
    assert any(n.endswith(".replaced") for n in _names(c, 0))  # kept for the operator
    await c.start_node(1)
    assert await recover(c) == 10
    for txid, value in one_value_per_txid(c).items():
        assert value == payload(txid, "w1" if txid <= 5 else "w2")


async def test_the_syncer_never_installs_a_deposed_copy_over_an_open_segment(
    mem_cluster: InMemoryCluster,
) -> None:
    c = mem_cluster
    await lying_finalize(c)
    await c.restart(2)  # jn2's in-progress 6-10 is no longer open for a writer
    await c.sync(2)
    names = _names(c, 2)
    assert not any(n.startswith("edits_0000000000000000006-") for n in names), names
    assert values_6_10(c, 2) == {t: payload(t, "w2") for t in range(6, 11)}


async def test_readers_read_the_current_writers_copy_not_the_deposed_one(
    mem_cluster: InMemoryCluster,
) -> None:
    c = mem_cluster
    await lying_finalize(c, finalized_on_jn1=False)
    reader = QuorumJournalReader(parse_qjournal_uri(c.uri(JID)), SETTINGS, client_factory=c.client)
    try:
        manifest = await reader.manifest(1, in_progress_ok=True, wait_s=5)
    finally:
        await reader.close()
    seg6 = next(s for s in manifest.segments if s.start == 6)
    hosts = " ".join(seg6.urls)
    assert "jn0." not in hosts, seg6  # writer 1's copy is never read
    assert "jn1." in hosts or "jn2." in hosts, seg6


def _names(c: InMemoryCluster, i: int) -> list[str]:
    return sorted(p.name for p in (c.slots[i].edits_dir / JID / "current").iterdir())
