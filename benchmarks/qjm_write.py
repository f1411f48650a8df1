"""qjm: `qjm journal write --concurrency N` against 3 JournalNode processes.

The benchmark measures the way anyone can: it runs the command (a fresh writer each time:
fence, recover, one segment of 200-byte ops, finalize) and reads its summary line.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

from benchmarks.common import BODY, RECORD, Sample, journalnodes

SUMMARY = re.compile(
    r"^wrote (\d+) records in (\d+\.\d+) s: \d+ records/s, p50 (\d+\.\d+) ms, "
    r"p99 (\d+\.\d+) ms, \d+ writers? \(txids \d+-\d+ in (\d+) batches, "
    r"\d+\.\d ops per batch, epoch \d+, client CPU (\d+)%\)$"
)
WRITERS = (1, 64, 256)  # the writer counts of this benchmark's own section (run())
SECONDS = 4.0


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


def format_journal(uri: str, config: str | None = None) -> None:
    """Format the journal on every node (logged in as config's security says)."""
    qjm("journal", "format", "--uri", uri, *_config(config), timeout=60)


def _config(config: str | None) -> tuple[str, ...]:
    return ("--config", config) if config else ()


def measure(uri: str, writers: int, seconds: float, config: str | None = None) -> Sample:
    """One `qjm journal write --concurrency` run of seconds; its summary as a Sample."""
    done = qjm(
        "journal", "write", "--uri", uri, *_config(config), "--concurrency", str(writers),
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


def run() -> str:
    """Measure each writer count on fresh JournalNodes; return a markdown section."""
    rows = []
    for writers in WRITERS:
        with journalnodes(3) as addrs:
            uri = f"qjournal://{';'.join(addrs)}/bench"
            format_journal(uri)
            rows.append((writers, measure(uri, writers, SECONDS)))
    lines = [
        "## Quorum writes (`qjm journal write --concurrency N`, 3 JournalNode processes)",
        "",
        f"Concurrent writers each append a {RECORD}-byte record and wait for a majority to",
        f"sync it (group commit, pipelined on each node's connection); {SECONDS:.0f} s per row.",
        "",
        "| writers | records/s | records per batch | p50 ms | p99 ms |",
        "|---:|---:|---:|---:|---:|",
    ]
    for writers, r in rows:
        per_batch = r.records / r.batches if r.batches else 0.0
        lines.append(
            f"| {writers} | {r.records / r.seconds:,.0f} | {per_batch:.1f} | "
            f"{r.p50_s * 1000:.2f} | {r.p99_s * 1000:.2f} |"
        )
    return "\n".join(lines) + "\n"
