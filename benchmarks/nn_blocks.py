"""The NameNode's block map in process: bytes per block and report speed (design §B.5).

    PYTHONPATH=src python -m benchmarks.nn_blocks [--blocks 1000000] [--replicas 3]

Builds a BlockManager with --blocks complete blocks (added and completed as the edit-log
apply path does), then one full block report per DataNode listing every block, so each
block has --replicas replicas. Reports tracemalloc's bytes held per block (the map, its
columns, the DataNodes; the report lists themselves are freed before measuring) and the
time of each phase.
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import time
import tracemalloc

from qjm.editlog.ops.types import Block
from qjm.namenode.blocks.block_manager import BlockManager
from qjm.namenode.blocks.datanode_manager import DatanodeRegistration, StorageReport
from qjm.namenode.blocks.pending_messages import ReportedReplica
from qjm.namenode.blocks.safe_mode import SafeMode

FIRST_ID = (1 << 30) + 1
GENSTAMP = 1001


class _Namespace:
    def current_generation_stamp(self) -> int:
        return GENSTAMP

    def last_allocated_block_id(self) -> int:
        return FIRST_ID + 1 << 40


def run(blocks: int, replicas: int) -> dict[str, float]:
    """Build the map and report; returns bytes per block and phase times."""
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    bm = BlockManager(_Namespace(), time.monotonic, random.Random(0), safe_mode=SafeMode())
    for i in range(replicas):
        uuid = f"dn{i}"
        bm.register_datanode(DatanodeRegistration(uuid, "127.0.0.1", uuid, 9000 + i, 1, 2))
        bm.heartbeat(uuid, [StorageReport(f"s{i}", capacity=1 << 50, remaining=1 << 50)])
    t0 = time.perf_counter()
    for k in range(blocks):
        b = Block(FIRST_ID + k, 1 << 27, GENSTAMP)
        bm.add_block(b, replicas)
        bm.force_complete(b)
    t1 = time.perf_counter()
    report_s = []
    for i in range(replicas):
        rep = [ReportedReplica(Block(FIRST_ID + k, 1 << 27, GENSTAMP)) for k in range(blocks)]
        t = time.perf_counter()
        bm.process_report(f"dn{i}", f"s{i}", rep)
        report_s.append(time.perf_counter() - t)
        del rep
    gc.collect()
    held = tracemalloc.get_traced_memory()[0] - base
    tracemalloc.stop()
    assert bm.live_replicas(FIRST_ID + blocks - 1) == replicas
    assert bm.complete_safe == blocks
    return {
        "blocks": blocks,
        "replicas": replicas,
        "bytes_per_block": round(held / blocks, 1),
        "add_complete_s": round(t1 - t0, 2),
        "full_report_s": round(max(report_s), 2),
    }


def main() -> None:
    """Run the benchmark and print one JSON line."""
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--blocks", type=int, default=1_000_000)
    ap.add_argument("--replicas", type=int, default=3)
    args = ap.parse_args()
    print(json.dumps(run(args.blocks, args.replicas)))


if __name__ == "__main__":
    main()
