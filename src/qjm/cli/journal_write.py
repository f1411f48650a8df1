"""`qjm journal write` and `qjm journal recover`: become the writer of a journal.

Both fence every older writer (a new epoch on a majority) and recover the newest segment.
`write` then opens a segment and writes opaque ops in batches, printing the last txid of
each batch on its own line as soon as a majority acknowledged it (so a script that kills
the writer knows what must survive); `recover` prints the journal's last txid.

`write --concurrency N` instead runs N writers in one process, each appending one op and
waiting for its own commit (they share group commit); each acknowledged txid is printed
as its writer learns of it, and the run ends with one summary line on stderr: records/s,
p50 and p99 commit latency.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import math
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TextIO

from qjm import runtime
from qjm.cli.common import resolve_uri
from qjm.client.journalnode_client import JournalNodeClient
from qjm.client.logger_channel import RpcClient
from qjm.client.output_stream import QuorumOutputStream
from qjm.client.quorum_journal_manager import QuorumJournalManager
from qjm.client.uri import QJournalUri
from qjm.config import QJournalSettings
from qjm.config_site import load_cluster_config
from qjm.editlog.framing import (
    MAX_OP_SIZE,
    OP_END_LOG_SEGMENT,
    OP_OPAQUE,
    OP_START_LOG_SEGMENT,
    op_size,
)
from qjm.errors import ConfigError

# Hadoop's ipc.maximum.data.length (128 MiB) is the largest call a JournalNode takes; the
# old transport's 64 MiB stays the bound, with room for the request's other fields.
MAX_MESSAGE_BYTES = 64 * 1024 * 1024
MAX_BATCH_BYTES = MAX_MESSAGE_BYTES - 1024 * 1024


def qjournal_settings(args: argparse.Namespace) -> QJournalSettings:
    """The [qjournal] settings of --config, or HDFS's defaults."""
    if getattr(args, "config", None):
        return load_cluster_config(args.config).qjournal
    return QJournalSettings()


def add_parsers(
    jsub: argparse._SubParsersAction[argparse.ArgumentParser],
    add_uri_args: Callable[[argparse.ArgumentParser], None],
) -> None:
    """Register `journal write` and `journal recover` under `qjm journal`."""
    wr = jsub.add_parser(
        "write",
        help="become the writer (fence + recover) and write ops; prints each acked txid",
    )
    add_uri_args(wr)
    amount = wr.add_mutually_exclusive_group(required=True)
    amount.add_argument("--count", type=int, help="number of ops to write")
    amount.add_argument(
        "--duration",
        type=float,
        help="with --concurrency: write for this many seconds instead of --count ops",
    )
    wr.add_argument("--batch", type=int, help="ops per acknowledged batch (default 10)")
    wr.add_argument(
        "--concurrency",
        type=int,
        help="run N writers at once, each appending one op and waiting for its own commit "
        "(they share group commit); prints each acknowledged txid and ends with one summary "
        "line (records/s, p50, p99) on stderr",
    )
    wr.add_argument("--size", type=int, default=100, help="payload bytes per op")
    wr.add_argument(
        "--finalize", action="store_true", help="end and finalize the segment at the end"
    )
    wr.set_defaults(func=run_write)

    rc = jsub.add_parser(
        "recover", help="fence older writers, recover the last segment, print the last txid"
    )
    add_uri_args(rc)
    rc.add_argument(
        "--survivors-only",
        action="store_true",
        help="when most JournalNodes lost their storage and were restored from peers: recover "
        "from every node that kept its data and let the restored ones vote again (txids "
        "acknowledged only on the lost disks cannot come back); every node must answer",
    )
    rc.set_defaults(func=run_recover)


def _payload(epoch: int, txid: int, size: int) -> bytes:
    head = f"qjm-write epoch={epoch} txid={txid} ".encode()
    if len(head) >= size:
        return head[:size]
    return head + b"." * (size - len(head))


async def _become_writer(
    qjm: QuorumJournalManager, uri: QJournalUri, err: TextIO
) -> tuple[int, QuorumOutputStream]:
    """Fence older writers, recover, say so on err, open the next segment: (its txid, stream)."""
    last = await qjm.recover_unfinalized_segments()
    epoch = qjm.epoch or 0
    print(f"writer epoch {epoch}: journal {uri.jid} recovered to txid {last}", file=err)
    first = last + 1
    return first, await qjm.start_log_segment(first)


async def write_ops(
    uri: QJournalUri,
    settings: QJournalSettings,
    count: int,
    batch: int,
    size: int,
    finalize: bool,
    out: TextIO,
    err: TextIO,
) -> int:
    """Fence, recover, write count ops in batches; print each acked txid. Returns the last."""
    qjm = QuorumJournalManager(uri, None, settings)
    try:
        first, stream = await _become_writer(qjm, uri, err)
        epoch = qjm.epoch or 0
        started = time.perf_counter()
        stream.write_op(OP_START_LOG_SEGMENT)
        acked = await stream.flush()
        out.write(f"{acked}\n")
        out.flush()
        written = 0
        while written < count:
            n = min(batch, count - written)
            for _ in range(n):
                stream.write_op(OP_OPAQUE, _payload(epoch, stream.next_txid, size))
            written += n
            acked = await stream.flush()
            out.write(f"{acked}\n")
            out.flush()
        if finalize:
            stream.write_op(OP_END_LOG_SEGMENT)
            acked = await stream.close()
            out.write(f"{acked}\n")
            out.flush()
            await qjm.finalize_log_segment(first, acked)
        took = time.perf_counter() - started
        # Let the nodes outside the last quorum finish too (not required for safety).
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(5.0):
                await qjm.loggers.wait_idle()
        rate = count / took if took > 0 else 0.0
        state = f"finalized segment {first}-{acked}" if finalize else f"segment {first} open"
        print(
            f"wrote {count} ops (txids {first}-{acked}, {stream.batches_sent} batches) in epoch "
            f"{epoch} in {took:.2f}s ({rate:.0f} ops/s); {state}",
            file=err,
        )
        return acked
    finally:
        await qjm.close()


async def recover_journal(
    uri: QJournalUri,
    settings: QJournalSettings,
    survivors_only: bool = False,
    *,
    client_factory: Callable[[str], RpcClient] = JournalNodeClient,
) -> tuple[int, int]:
    """Fence and recover; returns (epoch, last txid).

    survivors_only: recover from the nodes that kept their data, then start the next
    segment everywhere, which lets the restored nodes vote again (design §J.5).
    """
    qjm = QuorumJournalManager(uri, None, settings, client_factory=client_factory)
    try:
        last = await qjm.recover_unfinalized_segments(survivors_decide=survivors_only)
        if survivors_only:
            await qjm.start_log_segment(last + 1)  # empty: the next writer restarts it
        # Give the nodes outside the quorum a moment to finish too (not required).
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(5.0):
                await qjm.loggers.wait_idle()
        return qjm.epoch or 0, last
    finally:
        await qjm.close()


def percentile(sorted_values: list[float], p: float) -> float:
    """The p-th percentile (0-100) of already sorted values (nearest rank)."""
    if not sorted_values:
        return float("nan")
    k = min(len(sorted_values) - 1, max(0, math.ceil(p / 100 * len(sorted_values)) - 1))
    return sorted_values[k]


@dataclass(frozen=True)
class ConcurrentResult:
    """What `write --concurrency` measured: ops written, seconds, per-op commit latencies."""

    records: int
    seconds: float
    latencies_s: list[float]
    writers: int
    first_txid: int
    last_txid: int
    batches: int
    epoch: int
    cpu_s: float = 0.0  # CPU seconds this process used while writing

    def summary(self) -> str:
        """The one summary line: records/s, p50 and p99 in ms, writers, batching."""
        lat = sorted(self.latencies_s)
        rate = self.records / self.seconds if self.seconds > 0 else 0.0
        cpu = self.cpu_s / self.seconds if self.seconds > 0 else 0.0
        per_batch = self.records / self.batches if self.batches else 0.0
        writers = f"{self.writers} writer{'s' if self.writers != 1 else ''}"
        return (
            f"wrote {self.records} records in {self.seconds:.2f} s: {rate:.0f} records/s, "
            f"p50 {percentile(lat, 50) * 1000:.2f} ms, p99 {percentile(lat, 99) * 1000:.2f} ms, "
            f"{writers} (txids {self.first_txid}-{self.last_txid} in {self.batches} batches, "
            f"{per_batch:.1f} ops per batch, epoch {self.epoch}, client CPU {cpu:.0%})"
        )


class _LinePrinter:
    """Writes lines at once and flushes them once per event-loop turn."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.last: str | None = None
        self._pending = False

    def line(self, text: str) -> None:
        """Write one line; it is flushed before the loop's next turn."""
        self.out.write(text + "\n")
        self.last = text
        if not self._pending:
            self._pending = True
            asyncio.get_running_loop().call_soon(self._flush)

    def _flush(self) -> None:
        self._pending = False
        self.out.flush()


async def write_concurrently(
    uri: QJournalUri,
    settings: QJournalSettings,
    writers: int,
    count: int | None,
    duration_s: float | None,
    size: int,
    finalize: bool,
    out: TextIO,
    err: TextIO,
) -> ConcurrentResult:
    """Fence, recover, then run `writers` writers that each append one op and wait for it.

    Prints the START op's txid, each op's txid once a majority acknowledged it, and the
    END op's with finalize; the last line is always the last acknowledged txid.
    """
    qjm = QuorumJournalManager(uri, None, settings)
    try:
        first, stream = await _become_writer(qjm, uri, err)
        epoch = qjm.epoch or 0
        printer = _LinePrinter(out)
        stream.write_op(OP_START_LOG_SEGMENT)
        printer.line(str(await stream.flush()))
        batches_before = stream.batches_sent
        latencies: list[float] = []
        left = count if count is not None else -1
        started = time.perf_counter()
        cpu_started = time.process_time()
        stop_at = started + duration_s if duration_s is not None else math.inf

        async def writer() -> None:
            nonlocal left
            clock = time.perf_counter
            while left != 0 and clock() < stop_at:
                left -= 1
                t0 = clock()
                txid = stream.write_op(OP_OPAQUE, _payload(epoch, stream.next_txid, size))
                await stream.sync(txid)
                latencies.append(clock() - t0)
                printer.line(str(txid))

        await asyncio.gather(*(writer() for _ in range(writers)))
        took = time.perf_counter() - started
        cpu_s = time.process_time() - cpu_started
        acked = stream.acked_txid
        batches = stream.batches_sent - batches_before
        if finalize:
            stream.write_op(OP_END_LOG_SEGMENT)
            acked = await stream.close()
            printer.line(str(acked))
            await qjm.finalize_log_segment(first, acked)
        elif printer.last != str(acked):
            printer.line(str(acked))  # the last line says how far the journal goes
        out.flush()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(5.0):
                await qjm.loggers.wait_idle()
        return ConcurrentResult(
            records=len(latencies),
            seconds=took,
            latencies_s=latencies,
            writers=writers,
            first_txid=first + 1,
            last_txid=first + len(latencies),
            batches=batches,
            epoch=epoch,
            cpu_s=cpu_s,
        )
    finally:
        await qjm.close()


def check_write_sizes(size: int, batch: int) -> None:
    """Refuse ops or batches too large to write, before becoming the writer."""
    largest = MAX_OP_SIZE - op_size(0)
    if size > largest:
        raise ConfigError(
            f"--size {size} is larger than an op may be ({largest} bytes of payload; HDFS's "
            "dfs.namenode.max.op.size is 50 MiB)"
        )
    batch_bytes = batch * op_size(size)
    if batch_bytes > MAX_BATCH_BYTES:
        raise ConfigError(
            f"--batch {batch} ops of --size {size} make {batch_bytes} bytes, more than one "
            f"journal() call carries ({MAX_BATCH_BYTES} bytes); use a smaller --batch"
        )


def run_write(args: argparse.Namespace) -> int:
    """`qjm journal write`."""
    if args.concurrency is not None:
        return run_write_concurrently(args)
    if args.duration is not None:
        raise ConfigError("--duration needs --concurrency; without it, give --count")
    if args.batch is None:
        args.batch = 10
    if args.count < 0 or args.batch < 1 or args.size < 0:
        raise ConfigError("--count must be >= 0, --batch >= 1 and --size >= 0")
    check_write_sizes(args.size, args.batch)
    uri = resolve_uri(args)
    runtime.run(
        write_ops(
            uri,
            qjournal_settings(args),
            args.count,
            args.batch,
            args.size,
            args.finalize,
            sys.stdout,
            sys.stderr,
        )
    )
    return 0


def run_write_concurrently(args: argparse.Namespace) -> int:
    """`qjm journal write --concurrency N`."""
    if args.concurrency < 1:
        raise ConfigError(f"--concurrency must be at least 1, got {args.concurrency}")
    if args.batch is not None:
        raise ConfigError(
            "give --batch or --concurrency, not both: --batch does not apply with "
            "--concurrency (each writer appends one op and waits for it, and the writers "
            "waiting together share a batch)"
        )
    if args.count is not None and args.count < 0:
        raise ConfigError(f"--count must be >= 0, got {args.count}")
    if args.duration is not None and not args.duration > 0:
        raise ConfigError(f"--duration must be > 0 seconds, got {args.duration}")
    if args.size < 0:
        raise ConfigError(f"--size must be >= 0, got {args.size}")
    check_write_sizes(args.size, 1)
    uri = resolve_uri(args)
    result = runtime.run(
        write_concurrently(
            uri,
            qjournal_settings(args),
            args.concurrency,
            args.count,
            args.duration,
            args.size,
            args.finalize,
            sys.stdout,
            sys.stderr,
        )
    )
    print(result.summary(), file=sys.stderr, flush=True)
    return 0


def run_recover(args: argparse.Namespace) -> int:
    """`qjm journal recover`."""
    uri = resolve_uri(args)
    epoch, last = runtime.run(recover_journal(uri, qjournal_settings(args), args.survivors_only))
    print(last)
    print(f"writer epoch {epoch}: journal {uri.jid} recovered to txid {last}", file=sys.stderr)
    return 0
