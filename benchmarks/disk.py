"""The disk's ideal for a 3-copy log: 3 local writers appending batches and fdatasyncing each.

Each of 3 threads owns one file in a temp dir on the disk the JournalNodes use and, until
the time is up, appends a batch of 200-byte records (as many as there are writers, at most
64) and fdatasyncs it. A record counts once a majority of copies holds it, so records/s is
the second-fastest copy's rate; latency is that of one append + fdatasync.
"""

from __future__ import annotations

import os
import statistics
import tempfile
import threading
import time
from pathlib import Path

from benchmarks.common import RECORD, Sample

COPIES = 3
MAX_BATCH = 64


def _copy(path: Path, batch: int, seconds: float, out: list[float], counts: list[int]) -> None:
    data = b"x" * (RECORD * batch)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        stop = time.perf_counter() + seconds
        n = 0
        while time.perf_counter() < stop:
            t0 = time.perf_counter()
            os.write(fd, data)
            os.fdatasync(fd)
            out.append(time.perf_counter() - t0)
            n += batch
        counts.append(n)
    finally:
        os.close(fd)


def ideal(writers: int, seconds: float) -> Sample:
    """3 copies, batches of min(writers, 64) records, each batch fdatasynced."""
    batch = max(1, min(writers, MAX_BATCH))
    with tempfile.TemporaryDirectory(prefix="qjm-bench-disk-") as tmp:
        lats: list[list[float]] = [[] for _ in range(COPIES)]
        counts: list[int] = []
        threads = [
            threading.Thread(
                target=_copy, args=(Path(tmp) / f"copy{i}", batch, seconds, lats[i], counts)
            )
            for i in range(COPIES)
        ]
        start = time.perf_counter()
        for t in threads:
            t.start()
        for t in threads:
            t.join(seconds + 60)
        elapsed = time.perf_counter() - start
    if len(counts) != COPIES:
        raise RuntimeError("a disk writer thread did not finish")
    majority = sorted(counts)[COPIES // 2]  # the second-fastest of three copies
    sample = Sample.of([x for lat in lats for x in lat], elapsed, records=majority)
    sample.batches = majority // batch
    return sample


def fdatasync_4k(seconds: float) -> Sample:
    """One thread appending 4 KiB and fdatasyncing each append; latency per append."""
    with tempfile.TemporaryDirectory(prefix="qjm-bench-disk-") as tmp:
        fd = os.open(Path(tmp) / "one", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        data = b"x" * 4096
        lat: list[float] = []
        try:
            start = time.perf_counter()
            while time.perf_counter() - start < seconds:
                t0 = time.perf_counter()
                os.write(fd, data)
                os.fdatasync(fd)
                lat.append(time.perf_counter() - t0)
            elapsed = time.perf_counter() - start
        finally:
            os.close(fd)
    return Sample.of(lat, elapsed)


if __name__ == "__main__":
    for w in (1, 64):
        s = ideal(w, 2.0)
        print(w, round(s.records / s.seconds), round(s.p50_s * 1000, 3), round(s.p99_s * 1000, 3))
    s = fdatasync_4k(1.0)
    print("4k", round(s.p50_s * 1000, 3), statistics.mean([s.p99_s * 1000]))
