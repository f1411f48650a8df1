"""Shared pieces of the benchmarks: JournalNode and other server processes, percentiles."""

from __future__ import annotations

import contextlib
import math
import os
import socket
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from qjm.cluster.process import spawn, stop_pid, wait_ready

M = TypeVar("M")
RECORD = 200  # bytes per framed op, as in the project's bar
BODY = RECORD - 17  # body bytes that make a framed op of RECORD bytes


@contextlib.contextmanager
def journalnodes(n: int = 3, pids: list[int] | None = None) -> Iterator[list[str]]:
    """n JournalNode processes on loopback; yields their RPC addresses (pids, if given, filled)."""
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
            if pids is not None:
                pids.extend(d.pid for d in daemons)
            yield [ready[d.name]["rpc"] for d in daemons]
        finally:
            for d in daemons:
                stop_pid(d.pid)


def percentile(sorted_values: Sequence[float], p: float) -> float:
    """The p-th percentile (0-100) of already sorted values (nearest rank)."""
    if not sorted_values:
        return float("nan")
    k = min(len(sorted_values) - 1, max(0, math.ceil(p / 100 * len(sorted_values)) - 1))
    return sorted_values[k]


@dataclass
class Sample:
    """One timed run: records committed, seconds, p50 and p99 latency in seconds."""

    records: int
    seconds: float
    p50_s: float
    p99_s: float
    batches: int | None = None
    client_cpu: float | None = None  # cores the client used while measuring
    server_cpu: float | None = None  # cores the servers used together while measuring

    @staticmethod
    def of(latencies: list[float], seconds: float, records: int | None = None) -> Sample:
        """A sample from per-record (or per-batch) latencies."""
        lat = sorted(latencies)
        return Sample(
            len(lat) if records is None else records,
            seconds,
            percentile(lat, 50),
            percentile(lat, 99),
        )


@dataclass
class Result:
    """The rounds of one system at one writer count, combined."""

    samples: list[Sample] = field(default_factory=list)

    @property
    def records_per_s(self) -> float:
        """All records over all measured seconds."""
        secs = sum(s.seconds for s in self.samples)
        return sum(s.records for s in self.samples) / secs if secs else float("nan")

    @property
    def p50_ms(self) -> float:
        """The median of the rounds' p50s, in ms."""
        return statistics.median(s.p50_s for s in self.samples) * 1000

    @property
    def p99_ms(self) -> float:
        """The median of the rounds' p99s, in ms."""
        return statistics.median(s.p99_s for s in self.samples) * 1000

    @property
    def client_cpu(self) -> float | None:
        """Cores the client used, averaged over the rounds that measured it."""
        xs = [s.client_cpu for s in self.samples if s.client_cpu is not None]
        return statistics.mean(xs) if xs else None

    @property
    def server_cpu(self) -> float | None:
        """Cores the servers used together, averaged over the rounds that measured it."""
        xs = [s.server_cpu for s in self.samples if s.server_cpu is not None]
        return statistics.mean(xs) if xs else None

    @property
    def per_batch(self) -> float | None:
        """Records per batch, where the system reports batches."""
        batches = [s.batches for s in self.samples]
        if not batches or any(b is None for b in batches):
            return None
        total = sum(b for b in batches if b is not None)
        return sum(s.records for s in self.samples) / total if total else None


def cpu_seconds(pids: Sequence[int]) -> float:
    """User + system CPU seconds the processes used so far (0 for one that is gone)."""
    total = 0.0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_until(
    what: str, check: Callable[[], bool], timeout: float, *, logs: Sequence[Path] = ()
) -> None:
    """Poll check() until it is true; raise naming what and the logs' ends after timeout."""
    deadline = time.monotonic() + timeout
    while True:
        with contextlib.suppress(OSError):
            if check():
                return
        if time.monotonic() > deadline:
            ends = "".join(f"\n--- {p}:\n{tail(p)}" for p in logs)
            raise TimeoutError(f"{what}: not ready after {timeout:.0f} s{ends}")
        time.sleep(0.05)


def tail(path: Path, lines: int = 15) -> str:
    """The last lines of a log file, or a note that it is missing."""
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError as e:
        return f"({e})"


class Processes:
    """Server processes this benchmark started; stop() ends each of them, by its own pid."""

    def __init__(self) -> None:
        self.procs: list[tuple[str, subprocess.Popen[bytes]]] = []

    @property
    def pids(self) -> list[int]:
        """The pids of the processes started."""
        return [p.pid for _, p in self.procs]

    def start(self, argv: list[str], log: Path, cwd: Path | None = None) -> subprocess.Popen[bytes]:
        """Start argv with stdout and stderr to log."""
        log.parent.mkdir(parents=True, exist_ok=True)
        with open(log, "ab") as out:
            proc = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                cwd=cwd,
                start_new_session=True,
                env={**os.environ},
            )
        self.procs.append((argv[0], proc))
        return proc

    def check_alive(self, logs: Sequence[Path] = ()) -> None:
        """Raise if one of the processes exited."""
        for name, p in self.procs:
            if p.poll() is not None:
                ends = "".join(f"\n--- {log}:\n{tail(log)}" for log in logs)
                raise RuntimeError(f"{name} (pid {p.pid}) exited with {p.returncode}{ends}")

    def stop(self) -> None:
        """SIGTERM each process, SIGKILL the ones still running after 10 s."""
        for _, p in self.procs:
            if p.poll() is None:
                p.terminate()
        deadline = time.monotonic() + 10
        for _, p in self.procs:
            try:
                p.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(timeout=10)
        self.procs.clear()


def load_average() -> str:
    """The 1-minute load average, as a section reports it."""
    return f"{os.getloadavg()[0]:.2f}"


def timed_section(
    measure: Callable[[], M], section: Callable[[M, float, tuple[str, str]], str]
) -> str:
    """Measure, then the markdown section given how long that took and the load average
    before and after."""
    before = load_average()
    started = time.monotonic()
    m = measure()
    return section(m, time.monotonic() - started, (before, load_average()))
