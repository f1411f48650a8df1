"""Quorum writes: 64 concurrent writers through the QuorumJournalManager to 3 JournalNodes.

Each writer appends one 200-byte record and waits until a majority has synced it; group
commit lets the writers that wait together share one batch.
"""

from __future__ import annotations

import asyncio
import time

from benchmarks.common import BODY, RECORD, journalnodes, percentile
from qjm.cli import eventloop
from qjm.client.admin import new_namespace_info
from qjm.client.output_stream import DEFAULT_MAX_IN_FLIGHT
from qjm.client.quorum_journal_manager import QuorumJournalManager
from qjm.client.uri import parse_qjournal_uri
from qjm.editlog.framing import OP_OPAQUE

WRITERS = (1, 64, 256)
SECONDS = 4.0


async def _measure(uri: str, writers: int) -> dict[str, float]:
    q = QuorumJournalManager(parse_qjournal_uri(uri), new_namespace_info())
    await q.format(q.ns_info, force=True)  # type: ignore[arg-type]
    await q.recover_unfinalized_segments()
    stream = await q.start_log_segment(1)
    body = b"x" * BODY
    latencies: list[float] = []
    stop = time.perf_counter() + SECONDS

    async def one() -> None:
        while time.perf_counter() < stop:
            t0 = time.perf_counter()
            txid = stream.write_op(OP_OPAQUE, body)
            await stream.sync(txid)
            latencies.append(time.perf_counter() - t0)

    start = time.perf_counter()
    await asyncio.gather(*(one() for _ in range(writers)))
    elapsed = time.perf_counter() - start
    batches = stream.batches_sent
    await stream.close()
    await q.close()
    latencies.sort()
    return {
        "writers": writers,
        "records_per_s": len(latencies) / elapsed,
        "per_batch": len(latencies) / max(batches, 1),
        "p50_ms": percentile(latencies, 50) * 1000,
        "p99_ms": percentile(latencies, 99) * 1000,
    }


def run() -> str:
    """Measure each writer count on fresh JournalNodes; return a markdown section."""
    rows = []
    for writers in WRITERS:
        with journalnodes(3) as addrs:
            rows.append(eventloop.run(_measure(f"qjournal://{';'.join(addrs)}/bench", writers)))
    lines = [
        "## Quorum writes (QuorumJournalManager, 3 JournalNode processes)",
        "",
        f"Concurrent writers each append a {RECORD}-byte record and wait for a majority to",
        f"sync it (group commit, up to {DEFAULT_MAX_IN_FLIGHT} batches in flight, pipelined "
        f"on each node's connection); {SECONDS:.0f} s per row.",
        "",
        "| writers | records/s | records per batch | p50 ms | p99 ms |",
        "|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['writers']:.0f} | {r['records_per_s']:,.0f} | {r['per_batch']:.1f} | "
            f"{r['p50_ms']:.2f} | {r['p99_ms']:.2f} |"
        )
    return "\n".join(lines) + "\n"
