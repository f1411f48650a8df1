"""JournalNode ingest: batches of 200-byte records to 3 JournalNode processes.

One writer sends each batch to all three nodes at once (calls to one node in order, as
the protocol requires) and counts it acknowledged when two of three have synced it. This
measures what the JournalNodes and the RPC layer allow, below the quorum client.
"""

from __future__ import annotations

import asyncio
import statistics
import time

from benchmarks.common import BODY, RECORD, journalnodes
from qjm import runtime
from qjm.client.journalnode_client import JournalNodeClient
from qjm.client.logger_channel import request_info
from qjm.editlog.framing import OP_OPAQUE, encode_op
from qjm.protocol import qjournal_pb2 as pb
from qjm.protocol.namespace import namespace_info
from qjm.protocol.qjournal import journal_id

JID = "bench"
NS = namespace_info(namespace_id=1, cluster_id="CID-bench")
JID_PROTO = journal_id(JID)
BATCHES = (1, 8, 32, 128, 512)
SECONDS = 3.0


async def _run(addresses: list[str]) -> list[dict[str, float]]:
    clients = [JournalNodeClient(a) for a in addresses]
    serial = 0

    def req() -> pb.RequestInfoProto:
        nonlocal serial
        serial += 1
        return request_info(JID, 1, serial)

    try:
        for c in clients:
            await c.call("format", pb.FormatRequestProto(jid=JID_PROTO, ns_info=NS), 10)
            await c.call(
                "newEpoch", pb.NewEpochRequestProto(jid=JID_PROTO, ns_info=NS, epoch=1), 10
            )
        txid = 1
        rows = []
        payload = b"x" * BODY
        for batch in BATCHES:
            seg = txid
            for c in clients:
                await c.call(
                    "startLogSegment", pb.StartLogSegmentRequestProto(req=req(), txid=seg), 10
                )
            latencies: list[float] = []
            records = 0
            start = time.perf_counter()
            while time.perf_counter() - start < SECONDS:
                data = b"".join(encode_op(OP_OPAQUE, t, payload) for t in range(txid, txid + batch))
                r = pb.JournalRequestProto(
                    req=req(),
                    segment_txid=seg,
                    first_txid=txid,
                    num_txns=batch,
                    records=data,
                )
                r.req.committed_txid = txid - 1
                sent = time.perf_counter()
                calls = [asyncio.ensure_future(c.call("journal", r, 20)) for c in clients]
                for done, fut in enumerate(asyncio.as_completed(calls), start=1):
                    await fut
                    if done == 2:
                        latencies.append(time.perf_counter() - sent)
                await asyncio.gather(*calls)
                txid += batch
                records += batch
            elapsed = time.perf_counter() - start
            for c in clients:
                await c.call(
                    "finalizeLogSegment",
                    pb.FinalizeLogSegmentRequestProto(req=req(), start_txid=seg, end_txid=txid - 1),
                    10,
                )
            latencies.sort()
            rows.append(
                {
                    "batch": batch,
                    "records_per_s": records / elapsed,
                    "mb_per_s": records * RECORD / elapsed / 1e6,
                    "p50_ms": statistics.median(latencies) * 1000,
                    "p99_ms": latencies[int(len(latencies) * 0.99) - 1] * 1000,
                }
            )
        return rows
    finally:
        await asyncio.gather(*(c.close() for c in clients))


def run() -> str:
    """Start 3 JournalNodes, measure, stop them; return a markdown section."""
    with journalnodes(3) as addrs:
        rows = runtime.run(_run(addrs))
    lines = [
        "## JournalNode ingest (3 JournalNode processes, one writer, quorum 2 of 3)",
        "",
        "One writer sends each batch to all three nodes at once and counts it acknowledged",
        "when two have synced it; this measures the JournalNodes and the RPC layer, below",
        f"the quorum client. {RECORD}-byte records, one batch in flight, each run "
        f"{SECONDS:.0f} s; latency is from send to the second acknowledgement.",
        "",
        "| records per batch | records/s | MB/s | p50 ms | p99 ms |",
        "|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['batch']:.0f} | {r['records_per_s']:,.0f} | {r['mb_per_s']:.1f} | "
            f"{r['p50_ms']:.2f} | {r['p99_ms']:.2f} |"
        )
    return "\n".join(lines) + "\n"
