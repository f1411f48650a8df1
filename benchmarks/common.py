"""Shared pieces of the benchmarks: JournalNode processes and percentiles."""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Iterator
from pathlib import Path

from qjm.cluster.process import spawn, stop_pid, wait_ready

RECORD = 200  # bytes per framed op, as in the project's bar
BODY = RECORD - 17  # body bytes that make a framed op of RECORD bytes


@contextlib.contextmanager
def journalnodes(n: int = 3) -> Iterator[list[str]]:
    """n JournalNode processes on loopback; yields their RPC addresses."""
    with tempfile.TemporaryDirectory(prefix="qjm-bench-") as tmp:
        root = Path(tmp)
        daemons = [
            spawn(
                f"jn{i}",
                [
                    "journalnode",
                    "--edits-dir",
                    str(root / f"jn{i}"),
                    "--rpc-address",
                    "127.0.0.1:0",
                    "--http-address",
                    "127.0.0.1:0",
                    "--log-level",
                    "WARNING",
                ],
                root / f"jn{i}.log",
                root / f"jn{i}.ready",
            )
            for i in range(1, n + 1)
        ]
        try:
            ready = wait_ready(daemons)
            yield [ready[d.name]["rpc"] for d in daemons]
        finally:
            for d in daemons:
                stop_pid(d.pid)


def percentile(sorted_values: list[float], p: float) -> float:
    """The p-th percentile (0-100) of already sorted values."""
    if not sorted_values:
        return float("nan")
    k = min(len(sorted_values) - 1, max(0, round(p / 100 * len(sorted_values)) - 1))
    return sorted_values[k]
