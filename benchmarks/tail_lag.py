"""Commit -> visible lag: how long after a write is acknowledged a tailer receives it.

A writer appends batches at a steady pace through the QuorumJournalManager; a reader
follows the journal with `tail` (long polls of the JournalNodes' edits caches). The lag of
a batch is from the moment its sync returned to the moment the tailer holds its last txid.
"""

from __future__ import annotations

import asyncio
import time

from benchmarks.common import BODY, journalnodes, percentile
from qjm.client.admin import new_namespace_info
from qjm.client.quorum_journal_manager import QuorumJournalManager
from qjm.client.reader import QuorumJournalReader
from qjm.client.uri import parse_qjournal_uri
from qjm.editlog.framing import OP_OPAQUE

BATCHES = 1000
PER_BATCH = 10
PACE_S = 0.005


async def _measure(uri: str) -> dict[str, float]:
    parsed = parse_qjournal_uri(uri)
    q = QuorumJournalManager(parsed, new_namespace_info())
    await q.format(q.ns_info, force=True)  # type: ignore[arg-type]
    await q.recover_unfinalized_segments()
    stream = await q.start_log_segment(1)
    acked_at: dict[int, float] = {}
    seen_at: dict[int, float] = {}
    body = b"x" * BODY
    last_txid = BATCHES * PER_BATCH

    async def writer() -> None:
        for _ in range(BATCHES):
            for _ in range(PER_BATCH):
                txid = stream.write_op(OP_OPAQUE, body)
            await stream.sync(txid)
            acked_at[txid] = time.perf_counter()
            await asyncio.sleep(PACE_S)

    async def tailer() -> None:
        async with QuorumJournalReader(parsed) as reader:
            async for ops in reader.tail(1, wait_ms=1000):
                now = time.perf_counter()
                for op in ops:
                    seen_at[op.txid] = now
                if ops[-1].txid >= last_txid:
                    return

    await asyncio.gather(writer(), tailer())
    await stream.close()
    await q.close()
    lags = sorted(max(seen_at[t] - acked_at[t], 0.0) for t in acked_at)
    return {
        "p50_ms": percentile(lags, 50) * 1000,
        "p99_ms": percentile(lags, 99) * 1000,
        "max_ms": lags[-1] * 1000,
        "batches": len(lags),
    }


def run() -> str:
    """Measure on 3 fresh JournalNodes; return a markdown section."""
    with journalnodes(3) as addrs:
        r = asyncio.run(_measure(f"qjournal://{';'.join(addrs)}/lag"))
    return "\n".join(
        [
            "## Commit to visible lag (tailing committed in-progress edits)",
            "",
            f"A writer syncs {BATCHES} batches of {PER_BATCH} records, one every ~{PACE_S * 1000:.0f} ms;",
            "a reader in the same process tails them through the JournalNodes' edits caches.",
            "Lag is from the writer's acknowledgement to the tailer holding the batch.",
            "",
            "| batches | p50 ms | p99 ms | max ms | goal |",
            "|---:|---:|---:|---:|---|",
            f"| {r['batches']:.0f} | {r['p50_ms']:.2f} | {r['p99_ms']:.2f} | {r['max_ms']:.2f} | p99 < 50 ms |",
            "",
        ]
    )
