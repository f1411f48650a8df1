"""Mid-file corruption is not a torn tail (design §J.15): recovery must not cut acked txids.

A bit flipped inside an op that valid ops follow is damage, not the end of the log: the
node holding it fails its prepare_recovery loudly, naming the file and the txid, so it is
one failed answer and recovery goes on with the healthy majority (its new_epoch still
succeeds and names the segment, and its accept_recovery replaces the damaged copy).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from qjm.client.quorum_call import QuorumError
from qjm.editlog.file_names import inprogress_name
from qjm.editlog.framing import HEADER_LEN, iter_ops
from qjm.editlog.segments import scan_file
from qjm.testing.faults import NodeFaults
from qjm_cluster import (
    JNCluster,
    check_one_value_per_txid,
    payload,
    recover,
    settle,
    write_txns,
)

pytestmark = pytest.mark.timeout(60)


def flip_bit_in_txid(path: Path, txid: int) -> None:
    """Flip one bit in the body of the op with this txid, in place."""
    data = bytearray(path.read_bytes())
    for op in iter_ops(bytes(data), HEADER_LEN):
        if op.txid == txid:
            data[op.offset + 13 + len(op.body) // 2] ^= 0x04
            path.write_bytes(bytes(data))
            return
    raise AssertionError(f"txid {txid} not in {path}")


@pytest.mark.slow
async def test_corrupt_replica_and_slow_healthy_node_keep_acked_txids(tmp_path: Path) -> None:
    async with JNCluster(tmp_path) as cluster:
        jid = cluster.new_jid()
        await cluster.format(jid)
        f = [NodeFaults() for _ in range(3)]
        q = cluster.qjm(jid, f)
        assert await q.recover_unfinalized_segments() == 0
        stream = await q.start_log_segment(1)
        await write_txns(stream, 1, 25)  # 1-25 everywhere
        f[2].fail_from_txn(26)
        for nf in f:  # the writer dies before it reports committed=50 to anyone
            nf.fail("heartbeat")
        assert await write_txns(stream, 26, 25) == 50  # acked by jn0 and jn1 only
        await settle(q)  # the writer dies: no node learned committed=50
        flip_bit_in_txid(cluster.current_dir(1, jid) / inprogress_name(1), 30)
        late = [NodeFaults(delay_s=0.3), NodeFaults(), NodeFaults()]
        assert await recover(cluster, jid, late) == 50
        for i in (0, 1, 2):  # jn1 too: its accept_recovery replaced the damaged copy
            segs = cluster.read_segments(i, jid)
            assert (1, 50) in segs, f"jn{i}: {cluster.segment_files(i, jid)}"
            assert segs[(1, 50)] == {t: payload(t) for t in range(1, 51)}
        check_one_value_per_txid(cluster, jid)


async def test_corrupt_replica_fails_prepare_recovery_naming_file_and_txid(
    tmp_path: Path,
) -> None:
    async with JNCluster(tmp_path) as cluster:
        jid = cluster.new_jid()
        await cluster.format(jid)
        q = cluster.qjm(jid)
        assert await q.recover_unfinalized_segments() == 0
        stream = await q.start_log_segment(1)
        await write_txns(stream, 1, 10)
        await settle(q)
        files = [cluster.current_dir(i, jid) / inprogress_name(1) for i in range(3)]
        sizes = [p.stat().st_size for p in files]
        for i in range(2):  # a majority corrupted: recovery must fail, not cut the log
            flip_bit_in_txid(files[i], 4)
        with pytest.raises(QuorumError) as info:
            await recover(cluster, jid)
        text = str(info.value)
        assert inprogress_name(1) in text and "txid 4" in text, text
        assert [p.stat().st_size for p in files] == sizes  # nothing was cut
        assert scan_file(files[2]).last_txid == 10
