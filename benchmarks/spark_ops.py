"""The operations report of 10 M edits on Spark, in local[1] and local[2].

    python -m benchmarks.spark_ops [--edits 10000000] [--masters 'local[1],local[2]']
        [--keep DIR] [--json]

Generates a directory of finalized segments of 1 M ops each (in parallel, one process per
core): files created and closed with a block, directories made, and some files' times,
permissions and replication set, renamed and deleted, over 30 days. Then times:
- `qjm analyze ops --edits DIR --master M` for each master, each in a fresh process (the
  JVM's start included; the job's own seconds from summary.json);
- for reference, the single-process tool a user has today: `qjm oev -p stats` on each
  segment in turn (op counts only, no other table).
The op counts of every route must agree. Prints the markdown section (or JSON).
"""

from __future__ import annotations

import dataclasses
import os
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

from benchmarks.common import timed_section
from benchmarks.spark_namespace import run_analyze, spark_main
from qjm.editlog.file_names import finalized_name
from qjm.editlog.ops import (
    AddOp,
    CloseOp,
    DeleteOp,
    MkdirOp,
    Op,
    PermissionStatus,
    RenameOp,
    SetPermissionsOp,
    SetReplicationOp,
    TimesOp,
    encode_ops,
)
from qjm.editlog.ops.types import Block

EDITS = 10_000_000
SEGMENT_OPS = 1_000_000
MASTERS = ("local[1]", "local[2]")
START_MS = 1_700_000_000_000
SPAN_MS = 30 * 86_400_000
FILES_PER_DIR = 1000


def _workload(start: int, end: int, total: int) -> Iterator[tuple[int, Op]]:
    """The ops of txids start..end (of 1..total, timed over SPAN_MS): per file an add and a
    close, then sometimes more."""
    perm = PermissionStatus("user0", "supergroup", 0o644)
    dir_perm = PermissionStatus("user0", "supergroup", 0o755)
    add = AddOp(inode_id=0, path="", replication=3, mtime=0, atime=0, block_size=128 << 20,
                permission_status=perm, client_name="DFSClient_bench", client_machine="127.0.0.1")  # fmt: skip
    close = CloseOp(inode_id=0, path="", replication=3, mtime=0, atime=0,
                    block_size=128 << 20, permission_status=perm)  # fmt: skip
    txid = start
    f = start  # the file number: unique across segments because it starts at the txid
    while True:
        ts = START_MS + SPAN_MS * txid // (total + 1)
        d = f // FILES_PER_DIR
        path = f"/data/d{d % 100}/d{d}/f{f}"
        ops: list[Op] = []
        if f % FILES_PER_DIR == 0:
            ops.append(MkdirOp(inode_id=16385 + txid, path=f"/data/d{d % 100}/d{d}",
                               timestamp=ts, permission_status=dir_perm))  # fmt: skip
        ops.append(dataclasses.replace(add, inode_id=16385 + txid, path=path, mtime=ts, atime=ts))
        block = Block(1 << 30 | f, (f * 7919) % (128 << 20), 1001)
        ops.append(dataclasses.replace(close, path=path, mtime=ts, atime=ts, blocks=(block,)))
        k = f % 10
        if k in (1, 2):
            ops.append(TimesOp(path=path, mtime=ts, atime=ts + 1000))
        elif k == 3:
            ops.append(SetPermissionsOp(src=path, mode=0o600))
        elif k == 4:
            ops.append(SetReplicationOp(path=path, replication=2))
        elif k == 5:
            ops.append(RenameOp(src=path, dst=f"{path}.done", timestamp=ts))
        elif k == 6:
            ops.append(DeleteOp(path=path, timestamp=ts))
        for op in ops:
            yield txid, op
            if txid == end:
                return
            txid += 1
        f += 1


def _write_segment(directory: str, start: int, end: int, total: int) -> int:
    """Write the finalized segment start..end; its size in bytes."""
    data = encode_ops(_workload(start, end, total))
    (Path(directory) / finalized_name(start, end)).write_bytes(data)
    return len(data)


def generate(directory: Path, n: int) -> int:
    """Segments of SEGMENT_OPS ops holding txids 1..n, written in parallel; total bytes."""
    directory.mkdir(parents=True, exist_ok=True)
    ranges = [(s, min(n, s + SEGMENT_OPS - 1)) for s in range(1, n + 1, SEGMENT_OPS)]
    with ProcessPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        jobs = [(str(directory), a, b, n) for a, b in ranges]
        return sum(pool.map(_write_segment, *zip(*jobs, strict=True)))


def run_oev_stats(directory: Path) -> dict[str, Any]:
    """`qjm oev -p stats` on every segment in turn: seconds and the summed op counts."""
    counts: Counter[str] = Counter()
    t = time.monotonic()
    for seg in sorted(directory.glob("edits_*")):
        done = subprocess.run(
            [sys.executable, "-m", "qjm", "oev", "-p", "stats", "-i", str(seg), "-o", "-"],
            capture_output=True,
            text=True,
        )
        if done.returncode != 0:
            raise RuntimeError(f"qjm oev failed on {seg.name}: {done.stderr.strip()}")
        for line in done.stdout.splitlines():
            m = re.match(r"\s*(OP_\w+)\s*\(\s*\d+\):\s*(\d+)", line)
            if m and int(m.group(2)):
                counts[m.group(1)] += int(m.group(2))
    return {"wall_s": round(time.monotonic() - t, 2), "op_counts": dict(counts)}


def measure(
    edits: int = EDITS, masters: tuple[str, ...] = MASTERS, keep: str | None = None
) -> dict[str, Any]:
    """Generate the edits, run each route on them; timings and op counts."""
    with tempfile.TemporaryDirectory(prefix="qjm-spark-ops-bench-") as tmp:
        work = Path(keep or tmp)
        t = time.monotonic()
        segments = work / "current"
        size = generate(segments, edits)
        result: dict[str, Any] = {
            "edits": edits,
            "segments": -(-edits // SEGMENT_OPS),
            "bytes": size,
            "generate_s": round(time.monotonic() - t, 2),
            "spark": {},
        }
        for master in masters:
            r = run_analyze(["ops", "--edits", str(segments)], work / f"out-{master}", master)
            result["spark"][master] = r
        result["oev_stats"] = run_oev_stats(segments)
    want = result["oev_stats"]["op_counts"]
    for master, r in result["spark"].items():
        s = r["summary"]
        if s["op_counts"] != want or s["ops"] != edits or s["missing_txids"] != 0:
            raise RuntimeError(f"{master}: op counts {s['op_counts']} differ from oev's {want}")
        r["summary"] = {k: s[k] for k in ("ops", "segments", "missing_txids")}
    result["op_counts"] = want
    return result


def section(m: dict[str, Any], took_s: float, loads: tuple[str, str]) -> str:
    """The markdown section of a measure() result."""
    oev = m["oev_stats"]
    mix = ", ".join(f"{op} {n / m['edits']:.1%}" for op, n in sorted(m["op_counts"].items()))
    lines = [
        f"## Spark: the operations report of {m['edits'] / 1e6:.0f} M edits",
        "",
        f"{m['segments']} finalized segments of up to {SEGMENT_OPS:,} ops "
        f"({m['bytes'] / 2**20:.0f} MiB) in one directory; the mix: {mix}. Each Spark run "
        "is a fresh `qjm analyze ops --edits DIR --master M` process, timed from start to "
        "exit: the JVM's start, a task per segment decoding its ops in Python and writing "
        "them as Parquet with pyarrow, the summary (txid range, missing txids), counts by "
        "type, ops per day by type (the unit follows the log's span), the hottest paths and "
        "report.html. For reference, the single-process tool a "
        "user has today, `qjm oev -p stats` run on each segment in turn, gives only the "
        "counts by type; all routes' counts are checked equal.",
        "",
        "| route | wall time (s) | ops/s | of which |",
        "|---|---:|---:|---|",
    ]
    for master, r in m["spark"].items():
        lines.append(
            f"| `qjm analyze ops --master {master}` | **{r['wall_s']:.1f}** | "
            f"{m['edits'] / r['wall_s']:,.0f} | job {r['job_s']:.1f} s after the session is up |"
        )
    lines += [
        f"| `qjm oev -p stats` per segment (counts only) | **{oev['wall_s']:.1f}** | "
        f"{m['edits'] / oev['wall_s']:,.0f} | |",
        "",
        f"This section took {took_s:.0f} s (generating the edits {m['generate_s']:.0f} s); "
        f"load average (1 min) {loads[0]} before, {loads[1]} after.",
        "",
    ]
    return "\n".join(lines)


def run() -> str:
    """Measure and return the markdown section."""
    return timed_section(measure, section)


if __name__ == "__main__":
    spark_main(__doc__, ("edits", EDITS), measure, section)
