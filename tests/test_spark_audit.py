"""The journal audit's pure part against real JournalNodes (in this process)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from qjm.editlog.file_names import finalized_name
from qjm.editlog.framing import encode_op, iter_ops
from qjm.spark import audit as A
from qjm_cluster import JNCluster, journal_with_segments

pytestmark = pytest.mark.slow


def rewrite_op(path: Path, txid: int, body: bytes | None = None, flip: bool = False) -> None:
    """Give one op a new body of the same length with a valid checksum, or flip a byte."""
    data = bytearray(path.read_bytes())
    op = next(o for o in iter_ops(bytes(data)) if o.txid == txid)
    if flip:
        data[op.offset + 13] ^= 0xFF  # the checksum no longer matches
    else:
        assert body is not None and len(body) == len(op.body)
        frame = encode_op(op.opcode, txid, body)
        data[op.offset : op.offset + len(frame)] = frame
    path.write_bytes(bytes(data))


async def test_audit_finds_every_copy_consistent_then_each_damaged_one(tmp_path: Path) -> None:
    async with JNCluster(tmp_path) as cluster:
        jid = await journal_with_segments(cluster, [(1, 5), (6, 3), (9, 2, False)])
        uri = cluster.uri(jid)
        plans, down = await asyncio.to_thread(A.plan_audit, uri)
        assert down == {}
        assert [(p.start, p.end) for p in plans] == [(1, 5), (6, 8)]  # finalized only
        for p in plans:
            results = await asyncio.to_thread(A.audit_segment, p)
            assert [r.status for r in results] == [A.OK] * 3, results
            assert len({r.digest for r in results}) == 1
            assert all(r.ops == p.end - p.start + 1 for r in results)

        rewrite_op(cluster.current_dir(2, jid) / finalized_name(1, 5), 3, b"tx 9 ")
        rewrite_op(cluster.current_dir(1, jid) / finalized_name(6, 8), 7, flip=True)
        (cluster.current_dir(0, jid) / finalized_name(6, 8)).unlink()
        plans, _ = await asyncio.to_thread(A.plan_audit, uri)
        first = await asyncio.to_thread(A.audit_segment, plans[0])
        assert [r.status for r in first] == [A.OK, A.OK, A.DIFFERS]
        assert first[2].first_difference == 3 and "txid 3: its body differs" in first[2].detail
        second = await asyncio.to_thread(A.audit_segment, plans[1])
        assert [r.status for r in second] == [A.MISSING, A.CORRUPT, A.OK], second
        assert "checksum" in second[1].detail
        rows = list(await asyncio.to_thread(lambda: list(A.audit_rows(plans[0]))))
        assert [r["status"] for r in rows] == ["ok", "ok", "differs"]
        assert rows[2]["node"] == cluster.address(2)
