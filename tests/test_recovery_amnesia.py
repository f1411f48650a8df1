"""A node that lost its data must not vote in recovery as if it never had it.

Design §J.5: txids 6-10 acked on jn0+jn1, jn2 lags at 6-8, the writer dies. If jn1
then loses its copy (wiped and restored from peers, or its finalized segment moved aside
as bad) and answers prepare_recovery with "no segment", a quorum jn1+jn2 would choose 6-8
and lose acked txids. jn1 must fail its answer instead.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from qjm.client.decisions import RestoredNodesError
from qjm.client.quorum_call import QuorumError
from qjm.journalnode.journal import Journal
from qjm.journalnode.journal_status import status_of
from qjm.protocol.errors import AmnesiacNodeError, TombstonedSegmentError
from qjm.protocol.namespace import NamespaceInfo
from qjm.testing.faults import NodeFaults
from qjm_cluster import (
    JNCluster,
    check_one_value_per_txid,
    payload,
    recover,
    settle,
    write_segment,
    write_txns,
)
from test_journal import NS, Writer, open_journal, write

pytestmark = pytest.mark.timeout(60)


async def acked_10_on_jn0_jn1(cluster: JNCluster, jid: str, finalize: bool) -> None:
    """Segment 1-5 everywhere; segment 6 holds 6-10 on jn0+jn1 and 6-8 on jn2."""
    f = [NodeFaults() for _ in range(3)]
    q = cluster.qjm(jid, f)
    assert await q.recover_unfinalized_segments() == 0
    await write_segment(q, 1, 5)
    stream = await q.start_log_segment(6)
    await write_txns(stream, 6, 3)
    f[2].fail_from_txn(9)
    assert await write_txns(stream, 9, 2) == 10  # acked by jn0 and jn1
    if finalize:
        f[2].fail("finalizeLogSegment")
        await stream.close()
        await q.finalize_log_segment(6, 10)
    await settle(q)


@pytest.mark.parametrize("loss", ["restored", "moved_aside"])
async def test_a_node_that_lost_acked_txids_does_not_vote_them_away(
    tmp_path: Path, loss: str
) -> None:
    async with JNCluster(tmp_path) as cluster:
        jid = cluster.new_jid()
        ns = await cluster.format(jid)
        await acked_10_on_jn0_jn1(cluster, jid, finalize=loss == "moved_aside")
        await cluster.stop_node(1)
        if loss == "restored":
            # jn1's disk is wiped; the syncer restores VERSION and the promise from peers.
            shutil.rmtree(cluster.edits_dir(1) / jid)
            await cluster.start_node(1)
            node = cluster.nodes[1]
            assert node is not None
            restore = lambda j: j.restore_version(NamespaceInfo.from_proto(ns), 1)  # noqa: E731
            assert await node.run(jid, restore, create=True)
        else:
            bad = cluster.current_dir(1, jid) / "edits_0000000000000000006-0000000000000000010"
            bad.write_bytes(bad.read_bytes()[:20])
            await cluster.start_node(1)  # loading moves the bad segment aside
            assert bad.with_name(bad.name + ".corrupt").exists()
        await cluster.stop_node(0)  # jn0, the only other holder of 9-10, is unavailable
        if loss == "restored":
            # jn1's newEpoch answer says it was restored: it does not count, and jn2 alone
            # kept its data, so the writer stops before deciding anything (design §J.5).
            with pytest.raises(RestoredNodesError, match="recover --survivors-only") as restored:
                await recover(cluster, jid)
            del restored  # see below
        else:
            # jn1 fails its prepareRecovery answer loudly; jn2 alone is no quorum.
            with pytest.raises(QuorumError) as info:
                await recover(cluster, jid)
            refused = {type(e) for e in info.value.errors.values()}
            # The error's traceback keeps that writer's connections, and with them jn0's,
            # which backs off after the refused connects: drop it before the next writer.
            del info
            assert TombstonedSegmentError in refused, refused
        for i in (1, 2):
            assert (6, 8) not in cluster.read_segments(i, jid), cluster.segment_files(i, jid)
        await cluster.start_node(0)
        assert await recover(cluster, jid) == 10
        for i in (0, 2):
            assert cluster.finalized_txids(i, jid)[10] == payload(10)
        check_one_value_per_txid(cluster, jid)


def test_a_restored_journal_votes_again_only_after_its_first_segment(tmp_path: Path) -> None:
    j: Journal = open_journal(tmp_path)
    try:
        assert j.restore_version(NS, 2)
        j.new_epoch(NS, 3)
        assert j.awaiting_new_epoch is None
        with pytest.raises(AmnesiacNodeError, match="restored from a peer.*prepare_recovery"):
            j.prepare_recovery(Writer(3).req(), 1)
        assert any("restored from a peer" in p for p in status_of(j).problems), status_of(j)
        j.close()
        j = open_journal(tmp_path)  # the state survives a restart
        with pytest.raises(AmnesiacNodeError, match="restored from a peer"):
            j.prepare_recovery(Writer(3).req(), 1)
        w = Writer(3)
        j.start_log_segment(w.req(), 1, -64)
        write(j, w, 1, 1, 2)
        resp = j.prepare_recovery(w.req(), 1)
        assert resp.segment_state.end_txid == 2
        assert not any("restored from a peer" in p for p in status_of(j).problems)
    finally:
        j.close()


def test_a_fresh_format_votes_at_once(tmp_path: Path) -> None:
    j: Journal = open_journal(tmp_path)
    try:
        j.format(NS, force=False)
        j.new_epoch(NS, 1)
        assert not j.prepare_recovery(Writer(1).req(), 1).HasField("segment_state")
    finally:
        j.close()
