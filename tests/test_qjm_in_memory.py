"""The writer against real JournalNodes over an in-memory transport (no sockets, no sleeps).

Like Hadoop's TestQuorumJournalManagerUnit: the committed-txid check, fencing, the output
stream's group commit and out-of-sync rules, and a seeded randomized schedule of crashes,
restarts, failed calls and lost answers. Every call goes through the nodes' real IPC
handlers and journals (qjm.testing.in_memory).
The design's recovery cases 2.10.1-2.10.7 are in tests/test_recovery_cases.py, over this
transport and over real sockets.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random
import time
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from google.protobuf.message import EncodeError

from inmem_cluster import (
    JID,
    finalized,
    first_segment,
    formatted_cluster,
    idle,
    one_value_per_txid,
    payload,
    qjm,
    recover,
    settle,
    write_txns,
    writer,
)
from qjm.client.admin import new_namespace_info
from qjm.client.decisions import FormatRefused
from qjm.client.logger_channel import request_info
from qjm.client.output_stream import QuorumOutputStream
from qjm.client.quorum_call import QuorumError
from qjm.client.quorum_journal_manager import QuorumJournalManager
from qjm.client.recovery_comparator import RecoveryInvariantError
from qjm.editlog.framing import OP_OPAQUE, encode_op
from qjm.errors import QjmError
from qjm.ipc import RemoteError
from qjm.journalnode.storage import AMNESIAC
from qjm.protocol import qjournal_pb2 as pb
from qjm.protocol.errors import (
    EpochError,
    JournalError,
    JournalNodeUnavailable,
    JournalOutOfSyncError,
)
from qjm.protocol.qjournal import journal_id
from qjm.testing.in_memory import InjectedFault, InMemoryCluster, RpcRecord

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[InMemoryCluster]:
    async with formatted_cluster(tmp_path) as c:
        yield c


async def state_150_153_125(c: InMemoryCluster) -> None:
    """Design 2.10.2: segment 101 in progress ending 150 / 153 / 125 at writer epoch 1."""
    q = await first_segment(c)
    stream = await q.start_log_segment(101)
    await write_txns(stream, 101, 25)  # 101-125 everywhere
    c.faults[2].fail_from_txn(126)
    await write_txns(stream, 126, 25)  # 126-150 on jn0, jn1: acknowledged
    c.faults[0].fail_from_txn(151)
    with pytest.raises(QuorumError) as e:
        await write_txns(stream, 151, 3)  # 151-153 on jn1 only
    assert all(
        isinstance(x, (JournalNodeUnavailable, JournalOutOfSyncError))
        for x in e.value.errors.values()
    )
    await settle(q)
    for f in c.faults:
        f.clear()
    assert [max(c.segments(i, JID, False)[(101, None)]) for i in range(3)] == [150, 153, 125]


# -- the committed-txid check --------------------------------------------------------------------
async def test_recovery_never_ends_below_a_reported_committed_txid(
    cluster: InMemoryCluster,
) -> None:
    await state_150_153_125(cluster)
    await cluster.crash(1)  # recovery would choose jn0's 150 ...

    def claim_committed(method: str, resp: object) -> object:
        if method == "prepareRecovery":
            assert isinstance(resp, pb.PrepareRecoveryResponseProto)
            resp.last_committed_txid = 152  # ... but jn2 says 152 was committed
        return resp

    cluster.faults[2].tamper = claim_committed
    with pytest.raises(RecoveryInvariantError, match="152"):
        await recover(cluster)
    # Nothing was accepted or finalized: the in-progress copies are untouched.
    assert not cluster.faults[0].calls("acceptRecovery")
    assert not cluster.faults[2].calls("acceptRecovery")
    assert max(cluster.segments(0, JID, False)[(101, None)]) == 150
    assert max(cluster.segments(2, JID, False)[(101, None)]) == 125


async def test_prepare_recovery_reports_the_committed_txid_recovery_keeps(
    cluster: InMemoryCluster,
) -> None:
    q = await first_segment(cluster)
    stream = await q.start_log_segment(101)
    await write_txns(stream, 101, 10)
    await write_txns(stream, 111, 10)  # carries committed txid 110 to every node
    await settle(q)
    assert await recover(cluster) == 120
    answers = [f.calls("prepareRecovery")[-1].response for f in cluster.faults]
    assert all(a.last_committed_txid >= 110 for a in answers), answers


# -- fencing ---------------------------------------------------------------------------------------
async def test_a_new_writer_fences_the_old_one(cluster: InMemoryCluster) -> None:
    q1 = await first_segment(cluster, 10)
    s1 = await q1.start_log_segment(11)
    assert await write_txns(s1, 11, 3, "w1") == 13
    # 11-13 reached every node (the third copy is not left in flight to lose the race with
    # the new epoch, which would put that node out of sync instead of refusing by epoch).
    await idle(q1)
    q2 = await writer(cluster, 13)  # recovers 11-13 and finalizes it
    assert q2.epoch == 2
    await idle(q2)  # every node promised epoch 2
    with pytest.raises(QuorumError) as e:
        await write_txns(s1, 14, 1, "w1")
    assert e.value.epoch_error is not None
    assert all(isinstance(x, EpochError) for x in e.value.errors.values())
    with pytest.raises(QjmError):  # the writer refuses: its stream failed
        await q1.finalize_log_segment(11, 13)
    # The nodes refuse too, whatever the writer thinks.
    client = cluster.client(cluster.addresses[0])
    fin = pb.FinalizeLogSegmentRequestProto(
        req=request_info(JID, 1, 1000), start_txid=11, end_txid=13
    )
    with pytest.raises(EpochError):
        await client.call("finalizeLogSegment", fin, 5)
    with pytest.raises(QuorumError) as e:
        await q1.start_log_segment(14)
    assert e.value.epoch_error is not None
    assert 14 not in one_value_per_txid(cluster)
    stream = await q2.start_log_segment(14)
    assert await write_txns(stream, 14, 1, "w2") == 14
    await settle(q1)
    await settle(q2)


async def test_a_fenced_writers_delayed_batch_never_lands(cluster: InMemoryCluster) -> None:
    q1 = await first_segment(cluster, 10)
    s1 = await q1.start_log_segment(11)
    gates = [f.hold("journal") for f in cluster.faults]
    for txid in (11, 12):
        s1.write_op(OP_OPAQUE, payload(txid, "w1"))
    flush = asyncio.ensure_future(s1.flush())
    for g in gates:
        await g.wait_held()  # the batch is on its way to every node
    q2 = await writer(cluster, 10)  # sees no txid of segment 11: ends at 10
    await idle(q2)  # every node promised epoch 2
    for g in gates:
        g.open()  # the old writer's batch arrives after the new promise
    with pytest.raises(QuorumError) as e:
        await flush
    assert all(isinstance(x, EpochError) for x in e.value.errors.values())
    stream = await q2.start_log_segment(11)
    await write_txns(stream, 11, 2, "w2")
    await stream.close()
    await q2.finalize_log_segment(11, 12)
    values = one_value_per_txid(cluster)
    assert values[11] == payload(11, "w2") and values[12] == payload(12, "w2")
    await settle(q1)
    await settle(q2)


async def test_two_writers_racing_never_share_an_epoch(cluster: InMemoryCluster) -> None:
    qs = [qjm(cluster) for _ in range(4)]
    results = await asyncio.gather(
        *(q.recover_unfinalized_segments() for q in qs), return_exceptions=True
    )
    epochs = [q.epoch for q, r in zip(qs, results, strict=True) if not isinstance(r, Exception)]
    assert epochs and len(set(epochs)) == len(epochs)
    for r in results:
        assert not isinstance(r, Exception) or isinstance(r, QjmError), r
    for q in qs:
        await settle(q)


# -- the output stream -------------------------------------------------------------------------------
async def test_group_commit_concurrent_writers_share_one_batch(cluster: InMemoryCluster) -> None:
    q = await writer(cluster, 0)
    stream = await q.start_log_segment(1)

    async def one(i: int) -> int:
        txid = stream.write_op(OP_OPAQUE, payload(i))
        await stream.sync(txid)
        return txid

    assert sorted(await asyncio.gather(*(one(i) for i in range(64)))) == list(range(1, 65))
    assert stream.batches_sent == 1
    await idle(q)
    assert [len(f.calls("journal")) for f in cluster.faults] == [1, 1, 1]
    await settle(q)


async def test_group_commit_writers_behind_a_batch_share_the_next(
    cluster: InMemoryCluster,
) -> None:
    q = await writer(cluster, 0)
    stream = await q.start_log_segment(1)
    stream.max_in_flight = 1
    gates = [f.hold("journal", times=1) for f in cluster.faults]
    first = asyncio.ensure_future(stream.sync(stream.write_op(OP_OPAQUE, payload(1))))
    await gates[0].wait_held()

    async def one(i: int) -> None:
        await stream.sync(stream.write_op(OP_OPAQUE, payload(i)))

    rest = asyncio.gather(*(one(i) for i in range(2, 65)))
    for g in gates:
        g.open()
    await first
    await rest
    assert stream.acked_txid == 64
    assert stream.batches_sent == 2  # txid 1, then 2-64 together
    await idle(q)
    assert [r.request.num_txns for r in cluster.faults[0].calls("journal")] == [1, 63]
    await settle(q)


async def test_a_failed_node_is_out_of_sync_until_the_next_segment(
    cluster: InMemoryCluster,
) -> None:
    q = await writer(cluster, 0)
    stream = await q.start_log_segment(1)
    await write_txns(stream, 1, 1)
    await idle(q)  # jn0 took txid 1: the fault below is for txid 2
    cluster.faults[0].fail("journal", times=1)
    assert await write_txns(stream, 2, 1) == 2  # jn1, jn2 suffice
    await idle(q)  # jn0's failure may come after the quorum's answer
    assert q.loggers.metrics()[0].out_of_sync
    await idle(q)
    sent = len(cluster.faults[0].calls("journal"))
    assert await write_txns(stream, 3, 2) == 4
    await idle(q)
    assert len(cluster.faults[0].calls("journal")) == sent  # skipped, not sent
    await stream.close()
    await q.finalize_log_segment(1, 4)  # not on jn0, which lacks txids 2-4
    await idle(q)
    assert (1, 4) not in cluster.segments(0, JID)
    assert (1, 4) in cluster.segments(1, JID)
    stream = await q.start_log_segment(5)  # jn0 is back in sync
    await idle(q)
    assert not q.loggers.metrics()[0].out_of_sync
    assert await write_txns(stream, 5, 2) == 6
    await idle(q)
    assert len(cluster.faults[0].calls("journal")) == sent + 1
    await stream.close()
    await q.finalize_log_segment(5, 6)
    await idle(q)
    finalized(cluster, 0, 5, 6)
    await settle(q)


async def test_a_majority_failing_fails_the_write_and_the_stream(cluster: InMemoryCluster) -> None:
    q = await writer(cluster, 0)
    stream = await q.start_log_segment(1)
    await write_txns(stream, 1, 2)
    await idle(q)  # every node took txids 1-2: the faults below are for txid 3
    cluster.faults[0].fail("journal")
    cluster.faults[2].fail("journal")
    with pytest.raises(QuorumError) as e:
        await write_txns(stream, 3, 1)
    assert set(e.value.errors) == {cluster.addresses[0], cluster.addresses[2]}
    assert all(isinstance(x, InjectedFault) for x in e.value.errors.values())
    assert stream.failed is not None and stream.acked_txid == 2
    with pytest.raises(QuorumError):
        stream.write_op(OP_OPAQUE, b"x")  # the stream stays broken
    with pytest.raises(QjmError):
        await q.finalize_log_segment(1, 2)
    await settle(q)
    for f in cluster.faults:
        f.clear()
    assert await recover(cluster) >= 2


async def test_a_hanging_minority_does_not_block_writes(cluster: InMemoryCluster) -> None:
    q = await writer(cluster, 0)
    stream = await q.start_log_segment(1)
    gate = cluster.faults[2].hold("journal")
    assert await write_txns(stream, 1, 5) == 5
    assert await write_txns(stream, 6, 5) == 10
    await gate.wait_held()
    assert cluster.faults[2].calls("journal") == []  # none answered yet
    gate.open()
    await settle(q)
    assert [len(f.calls("journal")) for f in cluster.faults] == [2, 2, 2]


async def test_answers_lost_after_the_nodes_applied_them_survive_recovery(
    cluster: InMemoryCluster,
) -> None:
    q = await writer(cluster, 0)
    stream = await q.start_log_segment(1)
    await write_txns(stream, 1, 3)
    for f in cluster.faults:
        f.drop_answer("journal")
    with pytest.raises(QuorumError):
        await write_txns(stream, 4, 2)  # every node holds 4-5; the writer saw failures
    await settle(q)
    for f in cluster.faults:
        f.clear()
    assert await recover(cluster) == 5  # on a majority, so possibly committed: kept
    for i in range(3):
        finalized(cluster, i, 1, 5)


async def test_a_crashed_and_restarted_node_rejoins_at_the_next_segment(
    cluster: InMemoryCluster,
) -> None:
    q = await writer(cluster, 0)
    stream = await q.start_log_segment(1)
    await write_txns(stream, 1, 2)
    await cluster.crash(1)
    assert await write_txns(stream, 3, 2) == 4
    await cluster.start_node(1)
    assert await write_txns(stream, 5, 1) == 5  # still out of sync in this segment
    await stream.close()
    await q.finalize_log_segment(1, 5)
    stream = await q.start_log_segment(6)
    assert await write_txns(stream, 6, 2) == 7
    await stream.close()
    await q.finalize_log_segment(6, 7)
    await idle(q)
    finalized(cluster, 1, 6, 7)
    assert (1, 5) not in cluster.segments(1, JID)
    await settle(q)


async def test_accept_recovery_downloads_the_chosen_copy_from_its_node(
    cluster: InMemoryCluster,
) -> None:
    await state_150_153_125(cluster)
    await cluster.crash(2)
    assert await recover(cluster) == 153
    # jn0 held another length: it fetched jn1's copy through jn1's /getJournal.
    for i in range(2):
        finalized(cluster, i, 101, 153)
    urls = [r.request.from_url for r in cluster.faults[0].calls("acceptRecovery")]
    assert urls and "jn1.in-memory.invalid" in urls[-1]
    # it names the writer's namespace, which a source formatted for another one refuses
    assert "&storageInfo=-64%3A4242%3A0%3ACID-mem&" in urls[-1]


async def test_accept_recovery_fails_where_the_source_cannot_be_fetched(
    cluster: InMemoryCluster,
) -> None:
    await state_150_153_125(cluster)
    await cluster.crash(2)
    cluster.faults[1].fail("getJournal")  # jn1's segment downloads fail
    with pytest.raises(QuorumError) as e:
        await recover(cluster)  # jn0 cannot take 153: only jn1 accepts
    assert "acceptRecovery" in str(e.value)
    assert cluster.faults[0].calls("acceptRecovery")[-1].error is not None
    cluster.faults[1].clear()
    assert await recover(cluster) == 153
    for i in range(2):
        finalized(cluster, i, 101, 153)


async def test_a_forced_format_for_another_namespace_leaves_a_live_journal_alone(
    cluster: InMemoryCluster,
) -> None:
    q = await first_segment(cluster, 10)
    stream = await q.start_log_segment(11)
    assert await write_txns(stream, 11, 5) == 15
    stranger = qjm(cluster)
    try:
        with pytest.raises(FormatRefused, match="is in use: segment 11 is open"):
            await stranger.format(new_namespace_info("CID-other", 666), force=True)
    finally:
        await stranger.close()
    assert await write_txns(stream, 16, 1) == 16  # the writer goes on, nothing was wiped
    await stream.close()
    await q.finalize_log_segment(11, 16)
    await settle(q)
    for i in range(3):
        finalized(cluster, i, 1, 10)
        finalized(cluster, i, 11, 16)
    # the operator who names the journal's own namespace may still wipe it
    admin = qjm(cluster)
    try:
        await admin.format(new_namespace_info("CID-mem", 4242), force=True)
    finally:
        await admin.close()
    assert all(cluster.segments(i, JID) == {} for i in range(3))


# -- discardSegments (rolling-upgrade rollback) --------------------------------------------------


async def acked_6_to_10_on_two_nodes(c: InMemoryCluster) -> None:
    """1-5 finalized everywhere; 6-10 acknowledged by jn0 and jn1 only; the writer gone
    before any node learned that 6-10 are committed (their committed txid lags at 5)."""
    q = await first_segment(c, 5)
    stream = await q.start_log_segment(6)
    c.faults[2].fail_from_txn(6)
    for f in c.faults:
        f.fail("heartbeat")
    assert await write_txns(stream, 6, 5) == 10
    await settle(q)
    for f in c.faults:
        f.clear()
    assert [c.node(i).journals()[0].committed_txid for i in range(3)] == [5, 5, 5]


async def test_an_unfenced_discard_leaves_acknowledged_txids_to_the_next_recovery(
    cluster: InMemoryCluster,
) -> None:
    await acked_6_to_10_on_two_nodes(cluster)
    for i in range(2):
        await cluster.restart(i)  # no segment is open on a restarted node
    stranger = cluster.client(cluster.addresses[0])
    # Hadoop's request carries no epoch; qjm's may carry one no node promised (a stale
    # one is refused the same way: test_journal_rules)
    bare = pb.DiscardSegmentsRequestProto(jid=journal_id(JID), start_txid=6)
    ahead = pb.DiscardSegmentsRequestProto(
        jid=journal_id(JID), start_txid=6, req=request_info(JID, 7, 1)
    )
    with pytest.raises(JournalError, match="carries no writer epoch.*new_epoch"):
        await stranger.call("discardSegments", bare, 5)
    with pytest.raises(EpochError, match="epoch 7 was never promised"):
        await stranger.call("discardSegments", ahead, 5)
    for i in range(2):
        assert max(cluster.segments(i, JID, False)[(6, None)]) == 10
    q = qjm(cluster)
    try:
        assert await q.recover_unfinalized_segments() >= 10
    finally:
        await settle(q)
    for i in range(2):
        finalized(cluster, i, 6, 10)
        ops = cluster.segments(i, JID)[(6, 10)]
        assert all(ops[t] == payload(t) for t in range(6, 11))


async def test_a_fenced_discard_removes_the_segments_everywhere_and_the_next_writer_goes_on(
    cluster: InMemoryCluster,
) -> None:
    q = await first_segment(cluster, 5)
    stream = await q.start_log_segment(6)
    assert await write_txns(stream, 6, 5) == 10
    await stream.close()
    await q.finalize_log_segment(6, 10)
    stream = await q.start_log_segment(11)
    assert await write_txns(stream, 11, 2) == 12
    await settle(q)
    rollback = qjm(cluster)
    try:
        await rollback.create_new_unique_epoch()
        await rollback.discard_segments(6)
        with pytest.raises(QjmError, match="ran discard_segments from txid 6"):
            await rollback.start_log_segment(6)
    finally:
        await settle(rollback)
    for i in range(3):
        assert sorted(cluster.segments(i, JID, False)) == [(1, 5)]
        assert cluster.node(i).journals()[0].committed_txid == 5
    q = await writer(cluster, 5)  # the next writer recovers to start - 1 and goes on
    stream = await q.start_log_segment(6)
    assert await write_txns(stream, 6, 1, "after") == 6
    await stream.close()
    await q.finalize_log_segment(6, 6)
    await settle(q)
    for i in range(3):
        finalized(cluster, i, 6, 6, "after")


async def test_discard_needs_a_won_epoch_no_segment_and_every_node(
    cluster: InMemoryCluster,
) -> None:
    q = await first_segment(cluster, 5)
    stream = await q.start_log_segment(6)
    assert await write_txns(stream, 6, 2) == 7
    with pytest.raises(QjmError, match="started a segment"):
        await q.discard_segments(6)
    await settle(q)
    early = qjm(cluster)
    try:
        with pytest.raises(QjmError, match="create_new_unique_epoch"):
            await early.discard_segments(6)
    finally:
        await early.close()
    await cluster.crash(2)
    partial = qjm(cluster)
    try:
        await partial.create_new_unique_epoch()
        with pytest.raises(QjmError, match="needs all 3 nodes to succeed"):
            await partial.discard_segments(6)
    finally:
        await settle(partial)


# -- a seeded randomized schedule ---------------------------------------------------------------------
ROUNDS = int(os.environ.get("QJM_INMEM_ROUNDS", "600"))
SEED = int(os.environ.get("QJM_INMEM_SEED", "3077"))
DEPOSED_SERIAL = 1 << 40  # above any serial a writer of this schedule sends


@pytest.mark.slow
@pytest.mark.timeout(max(60, ROUNDS // 10))  # long runs (docs/reliability.md) take longer
async def test_randomized_schedule_every_acked_txid_survives(cluster: InMemoryCluster) -> None:
    started = time.monotonic()
    stats = await run_schedule(cluster, SEED, ROUNDS)
    report = os.environ.get("QJM_INMEM_REPORT")  # long runs record what they did
    if report:
        line = {"seed": SEED, "rounds": ROUNDS, "seconds": round(time.monotonic() - started, 1)}
        text = json.dumps({**line, "lost": 0, "stats": dict(stats)}) + "\n"
        await asyncio.to_thread(_append, Path(report), text)
    if ROUNDS >= 100:  # the schedule did exercise what it is for
        for what in ("crash", "restart", "recovered", "acked", "write failed", "rolled"):
            assert stats[what] >= 3, f"seed {SEED}: only {stats[what]} {what!r}: {stats}"
    if ROUNDS >= 600:
        for what in ("wipe", "sync", "late newEpoch", "deposed call"):
            assert stats[what] >= 1, f"seed {SEED}: no {what!r}: {stats}"


def _append(path: Path, text: str) -> None:
    with path.open("a") as f:
        f.write(text)


async def run_schedule(c: InMemoryCluster, seed: int, rounds: int) -> Counter[str]:
    """The seeded randomized schedule; its statistics (the seed is named on failure)."""
    stats: Counter[str] = Counter()
    try:
        await _randomized(c, random.Random(seed), rounds, stats)
    except BaseException as e:
        e.add_note(f"randomized schedule: QJM_INMEM_SEED={seed} QJM_INMEM_ROUNDS={rounds}; {stats}")
        raise
    return stats


class Deposed:
    """A fenced writer that still calls the JournalNodes' API itself, as any client may."""

    def __init__(self, epoch: int, segment: int, acked: int, next_txid: int, tag: str) -> None:
        self.epoch, self.segment, self.acked, self.next_txid, self.tag = (
            epoch,
            segment,
            acked,
            next_txid,
            tag,
        )
        self.serial = DEPOSED_SERIAL

    def req(self) -> pb.RequestInfoProto:
        """The next request, reporting what this writer had acknowledged (honestly)."""
        self.serial += 1
        return request_info(JID, self.epoch, self.serial, self.acked or None)

    async def act(self, c: InMemoryCluster, rng: random.Random) -> str:
        """One direct call to one node: finalize, more edits, or a discard; what it did."""
        client = c.client(rng.choice(c.addresses))
        kind = rng.choice(["finalize", "journal", "discard"])
        if kind == "finalize":
            request: Any = pb.FinalizeLogSegmentRequestProto(
                req=self.req(), start_txid=self.segment, end_txid=max(self.acked, self.segment)
            )
            method = "finalizeLogSegment"
        elif kind == "journal":
            n = rng.randint(1, 3)
            first = self.next_txid
            records = b"".join(
                encode_op(OP_OPAQUE, t, payload(t, self.tag)) for t in range(first, first + n)
            )
            request = pb.JournalRequestProto(
                req=self.req(),
                segment_txid=self.segment,
                first_txid=first,
                num_txns=n,
                records=records,
            )
            method = "journal"
        else:
            request = pb.DiscardSegmentsRequestProto(
                jid=journal_id(JID), start_txid=self.segment, req=self.req()
            )
            method = "discardSegments"
        try:
            await client.call(method, request, 5)
        except QjmError:
            return f"deposed {kind} refused"
        finally:
            await client.close()
        if kind == "journal":
            self.next_txid += request.num_txns
        return f"deposed {kind} taken"


def holders_of(c: InMemoryCluster, acked: dict[int, bytes], but: int) -> int:
    """The fewest nodes other than `but` that hold an acknowledged txid with its value."""
    held: Counter[int] = Counter()
    for i in range(c.n):
        if i == but:
            continue
        have: dict[int, bytes] = {}
        for ops in c.segments(i, JID, finalized_only=False).values():
            have.update(ops)
        held.update(t for t, v in acked.items() if have.get(t) == v)
    return min((held[t] for t in acked), default=c.n)


def _restored_or_unformatted(c: InMemoryCluster) -> list[int]:
    """The nodes, up or down, that lost their storage and are not back to voting yet."""
    out = []
    for i in range(c.n):
        current = c.slots[i].edits_dir / JID / "current"
        if not (current / "VERSION").exists() or (current / AMNESIAC).exists():
            out.append(i)
    return out


async def _recover_with_a_late_answer(
    c: InMemoryCluster, q: QuorumJournalManager, rng: random.Random, stats: Counter[str]
) -> int:
    """recover_unfinalized_segments, one node's newEpoch answer held until the others'."""
    up = [i for i in range(c.n) if c.is_up(i)]
    if len(up) < 2 or rng.random() >= 0.3:
        return await q.recover_unfinalized_segments()
    late = rng.choice(up)
    others = {i for i in up if i != late}
    gate = c.faults[late].hold("newEpoch", times=1)
    answered: set[int] = set()

    def seen_by(i: int) -> Any:
        def seen(record: RpcRecord) -> None:
            if record.method == "newEpoch":
                answered.add(i)  # its answer or its failure is in: now the late one's
                if answered >= others:
                    gate.open()

        return seen

    for i in others:
        c.faults[i].on_record = seen_by(i)
    stats["late newEpoch"] += 1
    try:
        return await q.recover_unfinalized_segments()
    finally:
        gate.open()
        for i in others:
            c.faults[i].on_record = None


async def _randomized(
    c: InMemoryCluster, rng: random.Random, rounds: int, stats: Counter[str]
) -> None:
    acked: dict[int, bytes] = {}
    q: QuorumJournalManager | None = None
    stream: QuorumOutputStream | None = None
    deposed: Deposed | None = None
    generation = 0

    async def drop_writer() -> None:
        nonlocal q, stream, deposed
        if q is not None:
            if stream is not None and q.epoch is not None:
                # It goes on calling the API itself, as a deposed writer may.
                last = stream.last_written_txid
                deposed = Deposed(
                    q.epoch, stream.segment_txid, stream.acked_txid, last + 1, f"d{generation}"
                )
            await q.close()  # a crash: calls in flight are abandoned
        q = stream = None

    for rnd in range(rounds):
        where = f"round {rnd}"
        roll = rng.random()
        if roll < 0.07:
            down = [i for i in range(c.n) if not c.is_up(i)]
            if down and (len(down) == 2 or rng.random() < 0.7):
                await c.start_node(rng.choice(down))
                stats["restart"] += 1
            else:
                await c.crash(rng.choice([i for i in range(c.n) if c.is_up(i)]))
                stats["crash"] += 1
            continue
        if roll < 0.12:
            # A node loses its disk, within the fault model: every acknowledged txid stays
            # on two other nodes, and no other node is restored or unformatted right now.
            for i in range(c.n):  # the syncers have had time to run
                if c.is_up(i):
                    with contextlib.suppress(QjmError, OSError):
                        stats["synced segments"] += await c.sync(i)
            safe = [i for i in range(c.n) if c.is_up(i) and holders_of(c, acked, i) >= 2]
            if not safe or _restored_or_unformatted(c):
                continue
            victim = rng.choice(safe)
            await c.wipe(victim, JID)
            stats["wipe"] += 1
            with contextlib.suppress(QjmError, OSError):  # its syncer's first round
                stats["synced segments"] += await c.sync(victim)
            continue
        if roll < 0.15:
            for i in range(c.n):  # the syncers' rounds
                if c.is_up(i):
                    with contextlib.suppress(QjmError, OSError):
                        stats["synced segments"] += await c.sync(i)
            stats["sync"] += 1
            continue
        if roll < 0.18 and deposed is not None:
            stats[await deposed.act(c, rng)] += 1
            stats["deposed call"] += 1
            continue
        if roll < 0.24:
            for f in c.faults:
                f.clear()
                if rng.random() < 0.5:
                    f.randomly(random.Random(rng.random()), 0.1, 0.05)
            continue
        if roll < 0.30 or q is None:
            await drop_writer()
            generation += 1
            q = qjm(c)
            try:
                last = await _recover_with_a_late_answer(c, q, rng, stats)
            except QjmError as e:
                assert not isinstance(e, RecoveryInvariantError), f"{where}: {e}"
                stats["recovery failed"] += 1
                stats[f"recovery failed: {type(e).__name__}"] += 1
                await q.close()
                q = None
                continue
            stats["recovered"] += 1
            assert last >= max(acked, default=0), f"{where}: recovered to {last}, acked {acked}"
            try:
                stream = await q.start_log_segment(last + 1)
            except QjmError:
                await drop_writer()
            continue
        assert stream is not None
        if roll < 0.37:
            end = stream.acked_txid
            if stream.last_written_txid < stream.segment_txid:
                continue  # nothing to roll
            try:
                await stream.close()
                if end >= stream.segment_txid:
                    await q.finalize_log_segment(stream.segment_txid, end)
                    stream = await q.start_log_segment(end + 1)
                    stats["rolled"] += 1
            except QjmError:
                await drop_writer()
            continue
        n = rng.randint(1, 4)
        first = stream.next_txid
        bodies = {t: payload(t, f"g{generation}") for t in range(first, first + n)}
        for body in bodies.values():
            stream.write_op(OP_OPAQUE, body)
        try:
            await stream.flush()
        except QjmError as e:
            assert not isinstance(e, RecoveryInvariantError), f"{where}: {e}"
            stats["write failed"] += 1
            await drop_writer()
            continue
        stats["acked"] += 1
        acked.update(bodies)

    # Heal everything; the syncers run; a new writer recovers; every acknowledged txid is
    # there, once.
    await drop_writer()
    for i, f in enumerate(c.faults):
        f.clear()
        if not c.is_up(i):
            await c.start_node(i)
    for _ in range(2):
        for i in range(c.n):
            await c.sync(i)
    last = await recover(c)
    assert last >= max(acked, default=0)
    for _ in range(2):
        for i in range(c.n):
            await c.sync(i)
    values = one_value_per_txid(c)
    for txid, body in acked.items():
        assert values.get(txid) == body, f"acked txid {txid}: {values.get(txid)!r} != {body!r}"
        holders = [
            i for i in range(c.n) if any(s <= txid <= (e or 0) for (s, e) in c.segments(i, JID))
        ]
        assert len(holders) >= 2, f"acked txid {txid} finalized only on {holders}"
    assert len(acked) > rounds // 10, "the schedule acknowledged almost nothing"


# -- the transport itself ------------------------------------------------------------------------
async def test_transport_checks_messages_and_errors_as_the_wire_does(
    cluster: InMemoryCluster,
) -> None:
    client = cluster.client(cluster.addresses[0])
    with pytest.raises(EncodeError):  # a required field missing: not sent, as over IPC
        await client.call("journal", pb.JournalRequestProto(first_txid=1), 5)
    with pytest.raises(RemoteError, match="NoSuchMethod"):
        await client.call("noSuchMethod", pb.IsFormattedRequestProto(), 5)
    # A refusal comes back as the error type the IPC client raises, named by address.
    await recover(cluster)
    await recover(cluster)  # the nodes promised epoch 2
    stale = pb.HeartbeatRequestProto(req=request_info(JID, 1, 1000))
    with pytest.raises(EpochError, match=cluster.addresses[0]):
        await client.call("heartbeat", stale, 5)
    await cluster.crash(0)
    with pytest.raises(JournalNodeUnavailable, match="down"):
        await client.call("isFormatted", pb.IsFormattedRequestProto(jid=journal_id(JID)), 5)
    await cluster.start_node(0)  # from its disk: still formatted
    answer = await client.call("isFormatted", pb.IsFormattedRequestProto(jid=journal_id(JID)), 5)
    assert answer.is_formatted
