"""`qjm journal write` and `qjm journal recover`: become the writer of a journal.

Both fence every older writer (a new epoch on a majority) and recover the newest segment.
`write` then opens a segment and writes opaque ops in batches, printing the last txid of
each batch on its own line as soon as a majority acknowledged it (so a script that kills
the writer knows what must survive); `recover` prints the journal's last txid.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
import time
from collections.abc import Callable
from typing import TextIO

from qjm.cli import eventloop
from qjm.client.output_stream import QuorumOutputStream
from qjm.client.quorum_journal_manager import QuorumJournalManager
from qjm.client.uri import QJournalUri
from qjm.config import QJournalSettings, load_config
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
        return load_config(args.config).qjournal
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
    wr.add_argument("--count", type=int, required=True, help="number of ops to write")
    wr.add_argument("--batch", type=int, help="ops per acknowledged batch (default 10)")
    wr.add_argument(
        "--concurrency",
        type=int,
        help="run N writers at once, each appending one op and waiting for its own commit "
        "(they share group commit); ends with records/s, p50 and p99 on stderr",
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
    rc.set_defaults(func=run_recover)


def _payload(epoch: int, txid: int, size: int) -> bytes:
    head = f"qjm-write epoch={epoch} txid={txid} ".encode()
    if len(head) >= size:
        return head[:size]
    return head + b"." * (size - len(head))


def percentile(sorted_values: list[float], p: float) -> float:
    """The p-th percentile (0-100, nearest rank) of already sorted values."""
    if not sorted_values:
        return float("nan")
    k = min(len(sorted_values) - 1, max(0, round(p / 100 * len(sorted_values)) - 1))
    return sorted_values[k]


class _LinePrinter:
    """Writes lines at once and flushes them once per event-loop turn."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self._pending = False

    def line(self, text: str) -> None:
        self.out.write(text + "\n")
        if not self._pending:
            self._pending = True
            asyncio.get_running_loop().call_soon(self._flush)

    def _flush(self) -> None:
        self._pending = False
        self.out.flush()


async def _write_concurrently(
    stream: QuorumOutputStream, epoch: int, count: int, size: int, writers: int, out: TextIO
) -> list[float]:
    """count ops by `writers` coroutines, each syncing its own op; their latencies, sorted."""
    printer = _LinePrinter(out)
    latencies: list[float] = []
    left = count

    async def writer() -> None:
        nonlocal left
        while left > 0:
            left -= 1
            started = time.perf_counter()
            txid = stream.write_op(OP_OPAQUE, _payload(epoch, stream.next_txid, size))
            await stream.sync(txid)
            latencies.append(time.perf_counter() - started)
            printer.line(str(txid))

    await asyncio.gather(*(writer() for _ in range(writers)))
    out.flush()
    latencies.sort()
    return latencies


async def write_ops(
    uri: QJournalUri,
    settings: QJournalSettings,
    count: int,
    batch: int,
    size: int,
    finalize: bool,
    out: TextIO,
    err: TextIO,
    concurrency: int | None = None,
) -> int:
    """Fence, recover, write count ops; print each acked txid. Returns the last.

    Without concurrency, ops go in batches of `batch`, one batch acknowledged at a time;
    with it, that many writers each append one op and wait for its commit.
    """
    qjm = QuorumJournalManager(uri, None, settings)
    try:
        last = await qjm.recover_unfinalized_segments()
        epoch = qjm.epoch or 0
        print(f"writer epoch {epoch}: journal {uri.jid} recovered to txid {last}", file=err)
        first = last + 1
        stream = await qjm.start_log_segment(first)
        started = time.perf_counter()
        stream.write_op(OP_START_LOG_SEGMENT)
        acked = await stream.flush()
        out.write(f"{acked}\n")
        out.flush()
        latencies: list[float] = []
        batches_before = stream.batches_sent
        writes_started = time.perf_counter()
        if concurrency is not None:
            latencies = await _write_concurrently(stream, epoch, count, size, concurrency, out)
            acked = stream.acked_txid
        written = 0
        while concurrency is None and written < count:
            n = min(batch, count - written)
            for _ in range(n):
                stream.write_op(OP_OPAQUE, _payload(epoch, stream.next_txid, size))
            written += n
            acked = await stream.flush()
            out.write(f"{acked}\n")
            out.flush()
        writes_took = time.perf_counter() - writes_started
        batches = stream.batches_sent - batches_before
        if finalize:
            stream.write_op(OP_END_LOG_SEGMENT)
            acked = await stream.close()
            out.write(f"{acked}\n")
            out.flush()
            await qjm.finalize_log_segment(first, acked)
        took = time.perf_counter() - started
        # Let the nodes outside the last quorum finish too (not required for safety).
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(qjm.loggers.wait_idle(), 5.0)
        rate = count / took if took > 0 else 0.0
        state = f"finalized segment {first}-{acked}" if finalize else f"segment {first} open"
        if concurrency is None:
            print(
                f"wrote {count} ops (txids {first}-{acked}, {stream.batches_sent} batches) in "
                f"epoch {epoch} in {took:.2f}s ({rate:.0f} ops/s); {state}",
                file=err,
            )
            return acked
        per_batch = count / batches if batches else 0.0
        records_per_s = count / writes_took if writes_took > 0 else 0.0
        print(
            f"wrote {count} ops with {concurrency} concurrent "
            f"writer{'s' if concurrency != 1 else ''} (txids {first}-{acked}, "
            f"{per_batch:.1f} ops per batch) in epoch {epoch}; {state}; "
            f"{records_per_s:.0f} records/s, p50 {percentile(latencies, 50) * 1000:.2f} ms, "
            f"p99 {percentile(latencies, 99) * 1000:.2f} ms",
            file=err,
        )
        return acked
    finally:
        await qjm.close()


async def recover_journal(uri: QJournalUri, settings: QJournalSettings) -> tuple[int, int]:
    """Fence and recover; returns (epoch, last txid)."""
    qjm = QuorumJournalManager(uri, None, settings)
    try:
        last = await qjm.recover_unfinalized_segments()
        # Give the nodes outside the quorum a moment to finish too (not required).
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(qjm.loggers.wait_idle(), 5.0)
        return qjm.epoch or 0, last
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
    from qjm.cli.journal import resolve_uri

    if args.concurrency is not None:
        if args.batch is not None:
            raise ConfigError("give --batch or --concurrency, not both")
        if args.concurrency < 1:
            raise ConfigError(f"--concurrency must be at least 1, got {args.concurrency}")
    batch = 10 if args.batch is None else args.batch
    if args.count < 0 or batch < 1 or args.size < 0:
        raise ConfigError("--count must be >= 0, --batch >= 1 and --size >= 0")
    check_write_sizes(args.size, batch if args.concurrency is None else 1)
    uri = resolve_uri(args)
    eventloop.run(
        write_ops(
            uri,
            qjournal_settings(args),
            args.count,
            batch,
            args.size,
            args.finalize,
            sys.stdout,
            sys.stderr,
            args.concurrency,
        )
    )
    return 0


def run_recover(args: argparse.Namespace) -> int:
    """`qjm journal recover`."""
    from qjm.cli.journal import resolve_uri

    uri = resolve_uri(args)
    epoch, last = eventloop.run(recover_journal(uri, qjournal_settings(args)))
    print(last)
    print(f"writer epoch {epoch}: journal {uri.jid} recovered to txid {last}", file=sys.stderr)
    return 0
