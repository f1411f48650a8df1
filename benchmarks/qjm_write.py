"""qjm: `qjm journal write --concurrency N` against 3 JournalNode processes.

The benchmark measures the way anyone can: it runs the command (a fresh writer each time:
fence, recover, one segment of 200-byte ops, finalize) and reads its summary line.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

from benchmarks.common import BODY, Sample

SUMMARY = re.compile(
    r"^wrote (\d+) records in (\d+\.\d+) s: \d+ records/s, p50 (\d+\.\d+) ms, "
    r"p99 (\d+\.\d+) ms, \d+ writers \(txids \d+-\d+ in (\d+) batches, epoch \d+, "
    r"client CPU (\d+)%\)$"
)


def qjm(*args: str, timeout: float) -> subprocess.CompletedProcess[str]:
    """Run the qjm command; raise with its stderr if it fails."""
    done = subprocess.run(
        [sys.executable, "-m", "qjm", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    if done.returncode != 0:
        raise RuntimeError(f"qjm {' '.join(args)} failed:\n{done.stderr}")
    return done


def format_journal(uri: str) -> None:
    """Format the journal on every node."""
    qjm("journal", "format", "--uri", uri, timeout=60)


def measure(uri: str, writers: int, seconds: float) -> Sample:
    """One `qjm journal write --concurrency` run of seconds; its summary as a Sample."""
    done = qjm(
        "journal", "write", "--uri", uri, "--concurrency", str(writers),
        "--duration", str(seconds), "--size", str(BODY), "--finalize",
        timeout=seconds + 120,
    )  # fmt: skip
    last = done.stderr.strip().splitlines()[-1]
    m = SUMMARY.match(last)
    if not m:
        raise RuntimeError(f"qjm journal write: unexpected summary line {last!r}")
    records, secs, p50, p99, batches, cpu = m.groups()
    return Sample(
        int(records),
        float(secs),
        float(p50) / 1000,
        float(p99) / 1000,
        int(batches),
        client_cpu=int(cpu) / 100,
    )
