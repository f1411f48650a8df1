"""Time Journal.journal() in process: per call, with the real fdatasync and with it skipped.

    PYTHONPATH=src python -m benchmarks.journal_call [calls]

Batches of 1 and 64 ops of 200 bytes; p50 in microseconds. The no-sync column is the
Python and write(2) cost of a call, the rest is the disk.
"""

from __future__ import annotations

import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from qjm.editlog.framing import OP_OPAQUE, encode_op
from qjm.journalnode.journal import Journal
from qjm.journalnode.storage import JNStorage
from qjm.protocol import qjournal_pb2 as pb
from qjm.protocol.namespace import NamespaceInfo

BODY = b"x" * (200 - 17)


def run(n_ops: int, calls: int, sync: bool) -> float:
    """p50 microseconds of journal() for batches of n_ops ops."""
    root = Path(tempfile.mkdtemp(prefix="journal-call-"))
    j = Journal("bench", JNStorage(root / "bench"), cache_bytes=10 * 1024 * 1024)
    try:
        ns = NamespaceInfo(1, "CID-bench")
        j.format(ns, False)
        j.new_epoch(ns, 1)
        reqs = [
            pb.RequestInfoProto(
                journal_id=pb.JournalIdProto(identifier="bench"), epoch=1, ipc_serial=s
            )
            for s in range(1, calls + 2)
        ]
        j.start_log_segment(reqs[0], 1, -64)
        if not sync:
            j.files._writer.sync = lambda: None  # type: ignore[method-assign,union-attr]
        batches = []
        for i in range(calls):
            first = 1 + i * n_ops
            data = b"".join(encode_op(OP_OPAQUE, t, BODY) for t in range(first, first + n_ops))
            batches.append((first, data))
            if i:
                reqs[i + 1].committed_txid = first - 1
        took: list[float] = []
        clock = time.perf_counter
        for (first, data), req in zip(batches, reqs[1:], strict=True):
            started = clock()
            j.journal(req, 1, first, n_ops, data)
            took.append(clock() - started)
        return statistics.median(took[calls // 10 :]) * 1e6
    finally:
        j.close()
        shutil.rmtree(root, ignore_errors=True)


def main() -> None:
    """Print the p50 per call of each batch size, best of three runs."""
    calls = int(sys.argv[1]) if len(sys.argv) > 1 else 3000
    for n in (1, 64):
        bare = min(run(n, calls, False) for _ in range(3))
        synced = min(run(n, max(calls // 3, 10), True) for _ in range(3))
        print(f"{n:3d} ops/batch: journal() p50 {bare:7.1f} us without sync, {synced:7.1f} us with")


if __name__ == "__main__":
    main()
