"""Recovery of unfinalized segments with real JournalNodes: design §J.13's cases.

(The design's cases 2.10.1-2.10.7 are in tests/test_recovery_cases.py, over both transports.)

Each test builds the state design §J.13 describes with a real writer whose RPCs to chosen
nodes fail (client-side faults, like Hadoop's spies) or with nodes really stopped, then
runs a new writer's recovery and checks where it ends and what every node holds.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from qjm.client.quorum_call import QuorumError
from qjm.client.quorum_journal_manager import QuorumJournalManager
from qjm.testing.faults import NodeFaults
from qjm_cluster import (
    JNCluster,
    check_finalized_on_quorum,
    check_one_value_per_txid,
    payload,
    recover,
    settle,
    wait_reachable,
    write_segment,
    write_txns,
)

pytestmark = pytest.mark.timeout(60)


def faults3() -> list[NodeFaults]:
    return [NodeFaults() for _ in range(3)]


async def new_journal(cluster: JNCluster) -> str:
    jid = cluster.new_jid()
    await cluster.format(jid)
    return jid


async def writer_with_first_segment(
    cluster: JNCluster, jid: str, faults: list[NodeFaults], end: int = 100
) -> QuorumJournalManager:
    """A writer at epoch 1 that wrote and finalized segment 1-<end> on every node."""
    q = cluster.qjm(jid, faults)
    assert await q.recover_unfinalized_segments() == 0
    assert q.epoch == 1
    await write_segment(q, 1, end)
    return q


# -- design §J.13, cases 8-14 (Hadoop's TestQuorumJournalManager) -------------------------
async def setup_loggers_345(cluster: JNCluster, jid: str) -> None:
    """JN0: 1-3, JN1: 1-4, JN2: 1-5, all in progress; txn 4 acknowledged, 5 not."""
    f = faults3()
    q = cluster.qjm(jid, f)
    await q.recover_unfinalized_segments()
    stream = await q.start_log_segment(1)
    f[0].fail_from_txn(4)
    f[1].fail_from_txn(5)
    await write_txns(stream, 1, 3)
    assert await write_txns(stream, 4, 1) == 4
    with pytest.raises(QuorumError, match="too many exceptions to achieve quorum size 2/3"):
        await write_txns(stream, 5, 1)
    await settle(q)


@pytest.mark.slow
@pytest.mark.parametrize(("away", "expected"), [(0, 5), (1, 5), (2, 4)])
async def test_change_writers_logs_out_of_sync(tmp_path: Path, away: int, expected: int) -> None:
    async with JNCluster(tmp_path) as cluster:
        jid = await new_journal(cluster)
        await setup_loggers_345(cluster, jid)
        await cluster.stop_node(away)
        assert await recover(cluster, jid) == expected
        check_finalized_on_quorum(cluster, jid, 1, expected)
        check_one_value_per_txid(cluster, jid)


async def test_change_writers_logs_in_sync(tmp_path: Path) -> None:
    async with JNCluster(tmp_path) as cluster:
        jid = await new_journal(cluster)
        q = cluster.qjm(jid)
        await q.recover_unfinalized_segments()
        await write_segment(q, 1, 3, finalize=False)
        await settle(q)
        assert await recover(cluster, jid) == 3
        for i in range(3):
            assert cluster.segment_files(i, jid) == [
                "edits_0000000000000000001-0000000000000000003"
            ]


async def test_crash_at_beginning_of_segment(tmp_path: Path) -> None:
    async with JNCluster(tmp_path) as cluster:
        jid = await new_journal(cluster)
        q = cluster.qjm(jid)
        await q.recover_unfinalized_segments()
        await write_segment(q, 1, 3)
        await q.start_log_segment(4)  # on every node, then the writer dies
        await settle(q)
        q2 = cluster.qjm(jid)
        assert await q2.recover_unfinalized_segments() == 3
        await write_segment(q2, 4, 3)  # restarts at the same txid
        await settle(q2)
        check_finalized_on_quorum(cluster, jid, 4, 6)
        check_one_value_per_txid(cluster, jid)


@pytest.mark.slow
@pytest.mark.parametrize("node_with_one_txn", [0, 1, 2])
async def test_out_of_sync_at_beginning_of_segment(tmp_path: Path, node_with_one_txn: int) -> None:
    async with JNCluster(tmp_path) as cluster:
        jid = await new_journal(cluster)
        node_with_empty_segment = (node_with_one_txn + 1) % 3
        node_missing_segment = (node_with_one_txn + 2) % 3
        f = faults3()
        q = cluster.qjm(jid, f)
        await q.recover_unfinalized_segments()
        await write_segment(q, 1, 3)
        await cluster.stop_node(node_missing_segment)
        stream = await q.start_log_segment(4)  # on 2 of 3
        f[node_with_empty_segment].fail_from_txn(4)
        with pytest.raises(QuorumError):
            await write_txns(stream, 4, 1)  # on node_with_one_txn only
        await settle(q)
        await cluster.start_node(node_missing_segment)
        # Recovery without node 2: txn 4 survives exactly when its holder took part.
        await cluster.stop_node(2)
        q2 = cluster.qjm(jid)
        last = await q2.recover_unfinalized_segments()
        expected = 4 if node_with_one_txn in (0, 1) else 3
        assert last == expected
        await write_segment(q2, expected + 1, 3)
        await settle(q2)
        check_one_value_per_txid(cluster, jid)


async def test_miss_finalize_and_next_start(tmp_path: Path) -> None:
    async with JNCluster(tmp_path) as cluster:
        jid = await new_journal(cluster)
        f = faults3()
        f[0].fail("finalizeLogSegment", when=lambda r: (r.start_txid, r.end_txid) == (1, 3))
        f[0].fail("startLogSegment", when=lambda r: r.txid == 4)
        f[1].fail_from_txn(4)
        q = cluster.qjm(jid, f)
        await q.recover_unfinalized_segments()
        await write_segment(q, 1, 3)
        stream = await q.start_log_segment(4)
        with pytest.raises(QuorumError, match="out of sync"):
            await write_txns(stream, 4, 1)
        await settle(q)
        # JN0: 1-3 in progress; JN1: 1-3 finalized; JN2: 1-3 finalized, 4 in progress (1 txn).
        assert cluster.segment_files(0, jid) == ["edits_inprogress_0000000000000000001"]
        await cluster.stop_node(2)
        assert await recover(cluster, jid) == 3
        check_one_value_per_txid(cluster, jid)


@pytest.mark.slow
async def test_recover_after_incomplete_recovery(tmp_path: Path) -> None:
    """An accepted but unfinalized recovery wins over a longer log seen later."""
    async with JNCluster(tmp_path) as cluster:
        jid = await new_journal(cluster)
        await setup_loggers_345(cluster, jid)
        await cluster.stop_node(2)  # the one with 5
        f = faults3()
        for x in f:
            x.fail("finalizeLogSegment")
        q = cluster.qjm(jid, f)
        with pytest.raises(QuorumError, match="Injected"):
            await q.recover_unfinalized_segments()  # accepts 1-4 on JN0 and JN1
        await settle(q)
        await cluster.stop_node(0)
        await cluster.start_node(2)
        # Sees JN1 (accepted 1-4) and JN2 (1-5, never accepted): must keep 4.
        assert await recover(cluster, jid) == 4
        await cluster.start_node(0)
        check_finalized_on_quorum(cluster, jid, 1, 4)
        check_one_value_per_txid(cluster, jid)


async def setup_one_jn_has_segment_with_accepted_recovery(cluster: JNCluster, jid: str) -> None:
    """JN0: 1-100 finalized, 101 in progress with accepted recovery 101-101; others 1-100."""
    f = faults3()
    q = await writer_with_first_segment(cluster, jid, f)
    f[1].fail_from_txn(101)
    f[2].fail_from_txn(101)
    with pytest.raises(QuorumError):
        await write_segment(q, 101, 1)
    await settle(q)
    # Recovery 1 sees JN0 and JN1 (JN2 is away, so the newest segment 101 is seen),
    # chooses JN0's 101-101, and only JN0 accepts it.
    f = faults3()
    f[1].fail("acceptRecovery")
    f[2].down = True
    q = cluster.qjm(jid, f)
    with pytest.raises(QuorumError, match="Injected"):
        await q.recover_unfinalized_segments()
    await settle(q)
    assert cluster.segment_files(0, jid)[-1] == "edits_inprogress_0000000000000000101"
    assert (cluster.current_dir(0, jid) / "paxos" / "101").exists()
    for i in (1, 2):
        assert not (cluster.current_dir(i, jid) / "paxos" / "101").exists()


@pytest.mark.slow
async def test_newer_version_of_segment_wins(tmp_path: Path) -> None:
    """A newer writer epoch beats a stale accepted proposal (JN0 away while writing)."""
    async with JNCluster(tmp_path) as cluster:
        jid = await new_journal(cluster)
        await setup_one_jn_has_segment_with_accepted_recovery(cluster, jid)
        await cluster.stop_node(0)
        q = cluster.qjm(jid)
        assert await q.recover_unfinalized_segments() == 100
        await write_segment(q, 101, 50, finalize=False)
        await settle(q)
        await cluster.start_node(0)
        assert await recover(cluster, jid) == 150
        check_finalized_on_quorum(cluster, jid, 101, 150)
        check_one_value_per_txid(cluster, jid)


@pytest.mark.slow
async def test_newer_version_of_segment_wins_other_crash_order(tmp_path: Path) -> None:
    """The same with JN0 back and JN1 away while the newer writer writes."""
    async with JNCluster(tmp_path) as cluster:
        jid = await new_journal(cluster)
        await setup_one_jn_has_segment_with_accepted_recovery(cluster, jid)
        await cluster.stop_node(0)
        q = cluster.qjm(jid)
        assert await q.recover_unfinalized_segments() == 100
        await cluster.start_node(0)
        await cluster.stop_node(1)
        await wait_reachable(q, 0)
        await write_segment(q, 101, 50, finalize=False)
        await settle(q)
        # JN0: 101-150 in progress (paxos 101-101 purged by start); JN2: 101-150; JN1: 1-100.
        await cluster.start_node(1)
        await cluster.stop_node(2)
        assert await recover(cluster, jid) == 150
        check_finalized_on_quorum(cluster, jid, 101, 150)
        check_one_value_per_txid(cluster, jid)


@pytest.mark.slow
async def test_crash_between_sync_log_and_persist_paxos_data(tmp_path: Path) -> None:
    """A node whose log is newer than its persisted paxos data still recovers >= acked."""
    async with JNCluster(tmp_path) as cluster:
        jid = await new_journal(cluster)
        await setup_loggers_345(cluster, jid)
        # Recovery with JN0, JN1 only, decides 4; only JN0 accepts.
        await cluster.stop_node(2)
        f = faults3()
        f[1].fail("acceptRecovery")
        q = cluster.qjm(jid, f)
        with pytest.raises(QuorumError, match="Injected"):
            await q.recover_unfinalized_segments()
        await settle(q)
        await cluster.start_node(2)
        # Recovery again without JN0's prepare: decides 5; every node crashes before it
        # persists the paxos data (after downloading).
        f = faults3()
        f[0].fail("prepareRecovery")

        def crash() -> None:
            raise OSError("Injected - crash before persisting paxos data")

        for inj in cluster.injectors:
            inj.before_persist_paxos_data = crash
        q = cluster.qjm(jid, f)
        with pytest.raises(QuorumError, match="Injected"):
            await q.recover_unfinalized_segments()
        await settle(q)
        for inj in cluster.injectors:
            inj.before_persist_paxos_data = lambda: None
        await cluster.stop_node(2)
        last = await recover(cluster, jid)
        assert last >= 4  # 4 was acknowledged by a quorum
        await cluster.start_node(2)
        check_one_value_per_txid(cluster, jid)


async def test_crash_after_persisting_paxos_data_rolls_forward(tmp_path: Path) -> None:
    """A crash between persisting paxos data and swapping the log in is completed later."""
    async with JNCluster(tmp_path) as cluster:
        jid = await new_journal(cluster)
        await setup_loggers_345(cluster, jid)

        def crash() -> None:
            raise OSError("Injected - crash after persisting paxos data")

        # JN1's prepare fails, so the source is JN2 (5). JN0 downloads, persists the paxos
        # data and crashes before swapping the file in; JN1's accept fails too.
        cluster.injectors[0].after_persist_paxos_data = crash
        f = faults3()
        f[1].fail("prepareRecovery")
        f[1].fail("acceptRecovery")
        q = cluster.qjm(jid, f)
        with pytest.raises(QuorumError, match="Injected"):
            await q.recover_unfinalized_segments()
        await settle(q)
        cluster.injectors[0].after_persist_paxos_data = lambda: None
        assert cluster.segment_files(0, jid) == ["edits_inprogress_0000000000000000001"]
        assert (cluster.current_dir(0, jid) / "paxos" / "1").exists()
        # JN0 (accepted 1-5; prepare rolls the download forward) and JN1 (1-4): JN0 wins.
        await cluster.stop_node(2)
        assert await recover(cluster, jid) == 5
        await cluster.start_node(2)
        check_finalized_on_quorum(cluster, jid, 1, 5)
        check_one_value_per_txid(cluster, jid)


async def setup_stale_same_length_log(cluster: JNCluster, jid: str) -> QuorumJournalManager:
    """JN0 holds 4-7 written in epoch 1 only to it; JN1 and JN2 get 4-7 from epoch 2.

    Returns writer 2 after it started segment 4 and wrote 4-7 (acknowledged), unfinalized.
    """
    f = faults3()
    q = await writer_with_first_segment(cluster, jid, f, end=3)
    stream = await q.start_log_segment(4)
    f[1].fail_from_txn(4)
    f[2].fail_from_txn(4)
    with pytest.raises(QuorumError):
        await write_txns(stream, 4, 4, tag="epoch1")  # JN0 only
    await settle(q)
    await cluster.stop_node(0)
    q2 = cluster.qjm(jid)
    assert await q2.recover_unfinalized_segments() == 3
    await cluster.start_node(0)
    await wait_reachable(q2, 0)
    stream = await q2.start_log_segment(4)  # JN0 refuses: it holds 4 txns of segment 4
    assert await write_txns(stream, 4, 4, tag="epoch2") == 7
    await stream.close()
    return q2


async def test_stale_log_of_the_same_length_is_not_finalized(tmp_path: Path) -> None:
    """The writer's finalize must not turn JN0's epoch-1 log into a finalized 4-7."""
    async with JNCluster(tmp_path) as cluster:
        jid = await new_journal(cluster)
        q2 = await setup_stale_same_length_log(cluster, jid)
        await q2.finalize_log_segment(4, 7)
        await settle(q2)
        check_one_value_per_txid(cluster, jid)
        assert await recover(cluster, jid) == 7
        check_one_value_per_txid(cluster, jid)


@pytest.mark.slow
async def test_stale_log_of_the_same_length_is_replaced_in_recovery(tmp_path: Path) -> None:
    """Recovery chooses epoch 2's 4-7; JN0's same-length epoch-1 copy must be replaced."""
    async with JNCluster(tmp_path) as cluster:
        jid = await new_journal(cluster)
        q2 = await setup_stale_same_length_log(cluster, jid)
        await settle(q2)  # writer 2 dies before finalizing
        await cluster.stop_node(2)
        assert await recover(cluster, jid) == 7  # JN0 (epoch 1) and JN1 (epoch 2)
        await cluster.start_node(2)
        values = check_one_value_per_txid(cluster, jid)
        assert values[4] == payload(4, "epoch2")
        assert cluster.read_segments(0, jid)[(4, 7)][4] == payload(4, "epoch2")


# -- a finalized copy decided by a later recovery (seed-3 fault schedule) ---------------------
@pytest.mark.slow
async def test_finalized_by_a_later_recovery_beats_a_minority_accept(tmp_path: Path) -> None:
    """A value accepted by a minority in epoch 2 loses to the value epoch 3 finalized.

    JN0 holds 4-5 (5 never acknowledged) and accepts it in epoch 2's recovery, which fails.
    Epoch 3 recovers without JN0: it finalizes 4-4 on JN1 and JN2, as Paxos allows (its
    prepare quorum saw no accepted value). JN0's copy then has the higher seen epoch (2)
    than the finalized copies' last writer epoch (1), but the finalized copy was decided
    in epoch 3: the next recovery must take it, not call it an unacknowledged finalize.
    """
    async with JNCluster(tmp_path) as cluster:
        jid = await new_journal(cluster)
        f = faults3()
        q = await writer_with_first_segment(cluster, jid, f, end=3)
        f[2].fail("startLogSegment")
        stream = await q.start_log_segment(4)  # on JN0 and JN1 only
        assert await write_txns(stream, 4, 1) == 4  # acknowledged by JN0 and JN1
        f[1].fail_from_txn(5)
        with pytest.raises(QuorumError, match="too many exceptions"):
            await write_txns(stream, 5, 1)  # JN0 only
        await settle(q)
        # Epoch 2 sees JN0 (4-5) and JN2 (no segment 4), chooses 4-5; only JN0 accepts it.
        f = faults3()
        f[1].down = True
        f[2].fail("acceptRecovery")
        q = cluster.qjm(jid, f)
        with pytest.raises(QuorumError, match="Injected"):
            await q.recover_unfinalized_segments()
        await settle(q)
        # Epoch 3 sees JN1 (4-4, writer epoch 1) and JN2: finalizes 4-4 on both.
        await cluster.stop_node(0)
        assert await recover(cluster, jid) == 4
        await cluster.start_node(0)
        check_finalized_on_quorum(cluster, jid, 4, 4)
        # Epoch 4 sees JN0 (4-5, accepted in epoch 2) and the finalized copies.
        assert await recover(cluster, jid) == 4
        for i in range(3):
            assert cluster.read_segments(i, jid)[(4, 4)] == {4: payload(4)}, i
        check_one_value_per_txid(cluster, jid)
