"""Writing one segment through the quorum with group commit (design §J.14).

Writers append ops to a buffer (cheap, synchronous: assign the txid and frame the op).
A sync cuts the buffer into one journal() batch, queues it on every node's channel and
waits until a majority acknowledged it. Callers that sync while a batch is in flight wait
for it, and the ops they wrote meanwhile go out together in the next batch: many
concurrent writers share each round trip. Up to max_in_flight batches may await their
quorum at once; each node's channel pipelines them on its connection, so the next batch
is already at the node when it finishes syncing one. A JournalNode syncs each batch on its
own, one after the other, so a deeper pipeline would split the same ops into more syncs
and queue them at the node; a few batches in flight keep every node busy.

A batch that cannot reach a majority breaks the stream: it and every later sync raise,
and the writer must stop (an HDFS NameNode aborts) rather than go on unreplicated.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from dataclasses import dataclass, field

from qjm.client.logger_set import AsyncLoggerSet
from qjm.editlog.framing import encode_op, validate_batch
from qjm.errors import QjmError

log = logging.getLogger("qjm.client.output_stream")

DEFAULT_BUFFER_CAPACITY = 512 * 1024  # HDFS's dfs.namenode.edits.qjournal output buffer
DEFAULT_MAX_IN_FLIGHT = 4


class StreamClosedError(QjmError):
    """The stream was closed or aborted; nothing more can be written to it."""


def _retrieve(fut: asyncio.Future[int]) -> None:
    if not fut.cancelled():
        fut.exception()


@dataclass
class _Batch:
    first_txid: int
    last_txid: int
    done: asyncio.Future[int] = field(repr=False)
    waiters: list[asyncio.Future[None]] = field(default_factory=list, repr=False)


def _wake(waiters: list[asyncio.Future[None]]) -> None:
    """Resume every sync waiting on these futures; each then re-checks the stream."""
    for w in waiters:
        if not w.done():
            w.set_result(None)
    waiters.clear()


class QuorumOutputStream:
    """The open segment of the active writer: buffer ops, flush batches to a quorum."""

    def __init__(
        self,
        loggers: AsyncLoggerSet,
        segment_txid: int,
        write_timeout_s: float,
        *,
        max_in_flight: int = DEFAULT_MAX_IN_FLIGHT,
        buffer_capacity: int = DEFAULT_BUFFER_CAPACITY,
    ) -> None:
        if max_in_flight < 1:
            raise ValueError(f"max_in_flight must be at least 1, got {max_in_flight}")
        self.loggers = loggers
        self.segment_txid = segment_txid
        self.write_timeout_s = write_timeout_s
        self.max_in_flight = max_in_flight
        self.buffer_capacity = buffer_capacity
        self._next_txid = segment_txid
        self._acked_txid = segment_txid - 1
        self._buf: list[bytes] = []
        self._buf_first = segment_txid
        self._buf_bytes = 0
        self._inflight: deque[_Batch] = deque()
        self._cut_waiters: list[asyncio.Future[None]] | None = None  # a cut is scheduled
        self._error: BaseException | None = None
        self._closed = False
        self.batches_sent = 0

    def __repr__(self) -> str:
        return (
            f"QuorumOutputStream(segment={self.segment_txid}, next={self._next_txid}, "
            f"acked={self._acked_txid}, buffered={self._buf_bytes}B, "
            f"in_flight={len(self._inflight)})"
        )

    # -- state ---------------------------------------------------------------------------------
    @property
    def next_txid(self) -> int:
        """The txid the next op will get."""
        return self._next_txid

    @property
    def last_written_txid(self) -> int:
        """The txid of the last op written (acknowledged or not)."""
        return self._next_txid - 1

    @property
    def acked_txid(self) -> int:
        """The highest txid a majority acknowledged."""
        return self._acked_txid

    @property
    def failed(self) -> BaseException | None:
        """The error that broke the stream, if any."""
        return self._error

    def _check_writable(self) -> None:
        if self._error is not None:
            raise self._error
        if self._closed:
            raise StreamClosedError(f"segment {self.segment_txid} stream is closed")

    # -- writing -------------------------------------------------------------------------------
    def write_op(self, opcode: int, body: bytes = b"") -> int:
        """Frame an op with the next txid and buffer it; returns the txid."""
        self._check_writable()
        txid = self._next_txid
        rec = encode_op(opcode, txid, body)
        self._buf.append(rec)
        self._buf_bytes += len(rec)
        self._next_txid = txid + 1
        return txid

    def write_records(self, records: bytes, first_txid: int, num_txns: int) -> int:
        """Buffer ops framed by the caller, which must continue the txid sequence."""
        self._check_writable()
        if first_txid != self._next_txid:
            raise ValueError(f"records start at txid {first_txid}, expected {self._next_txid}")
        validate_batch(records, first_txid, num_txns)
        self._buf.append(bytes(records))
        self._buf_bytes += len(records)
        self._next_txid = first_txid + num_txns
        return self._next_txid - 1

    def _cut(self) -> _Batch:
        """Turn the buffer into a batch queued on every channel now, in order."""
        data = b"".join(self._buf) if len(self._buf) != 1 else self._buf[0]
        first = self._buf_first
        last = self._next_txid - 1
        self._buf = []
        self._buf_bytes = 0
        self._buf_first = last + 1
        call = self.loggers.send_edits(self.segment_txid, first, last - first + 1, data)
        batch = _Batch(first, last, asyncio.get_running_loop().create_future())
        batch.done.add_done_callback(_retrieve)
        previous = self._inflight[-1] if self._inflight else None
        self._inflight.append(batch)
        self.batches_sent += 1

        async def finish() -> None:
            try:
                if previous is not None:
                    await asyncio.shield(previous.done)
                await self.loggers.wait_for_write_quorum(call, self.write_timeout_s)
            except asyncio.CancelledError:
                batch.done.cancel()
                for w in batch.waiters:
                    w.cancel()
                raise
            except Exception as e:
                if self._error is None:
                    self._error = e
                    log.error(
                        "segment %d: batch %d-%d failed: %s", self.segment_txid, first, last, e
                    )
                batch.done.set_exception(self._error)
            else:
                self._acked_txid = last
                self.loggers.set_committed_txid(last)
                batch.done.set_result(last)
            finally:
                self._inflight.remove(batch)
                _wake(batch.waiters)
            # Queued after the writers just woken, so it sees whether they wrote again.
            asyncio.get_running_loop().call_soon(self._report_if_idle)

        asyncio.get_running_loop().create_task(finish(), name=f"qjm-batch-{first}-{last}")
        return batch

    def _scheduled_cut(self) -> list[asyncio.Future[None]]:
        """The waiters of the next cut, which runs once the writers woken with us appended."""
        if self._cut_waiters is None:
            self._cut_waiters = []
            asyncio.get_running_loop().call_soon(self._cut_now)
        return self._cut_waiters

    def _cut_now(self) -> None:
        """Cut the scheduled batch; its waiters then wait for that batch's quorum."""
        waiters, self._cut_waiters = self._cut_waiters or [], None
        if self._error is None and self._buf and len(self._inflight) < self.max_in_flight:
            self._cut().waiters.extend(waiters)
        else:
            _wake(waiters)  # nothing to send now: let them look again

    def _report_if_idle(self) -> None:
        """Send the committed txid at once if no batch will carry it soon (readers see it)."""
        if not (self._buf or self._inflight or self._error or self._cut_waiters is not None):
            self.loggers.report_committed()

    async def sync(self, txid: int) -> None:
        """Return once a majority acknowledged every op up to txid (group commit)."""
        while self._acked_txid < txid:
            if self._error is not None:
                raise self._error
            waiters = None
            for b in self._inflight:
                if b.last_txid >= txid:
                    waiters = b.waiters
                    break
            if waiters is None:
                if self._buf and len(self._inflight) < self.max_in_flight:
                    # Let the writers woken with us append their ops first, so one batch
                    # carries them all (group commit).
                    waiters = self._scheduled_cut()
                elif self._inflight:
                    waiters = self._inflight[0].waiters
                else:
                    raise StreamClosedError(
                        f"txid {txid} was never written to segment {self.segment_txid} "
                        f"(last written {self.last_written_txid})"
                    )
            woken: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            waiters.append(woken)
            await woken  # cancelling this sync cancels only its own future

    async def flush(self) -> int:
        """Sync everything written so far; returns the highest acknowledged txid."""
        if self._error is not None:
            raise self._error
        await self.sync(self._next_txid - 1)
        return self._acked_txid

    async def close(self) -> int:
        """Flush what is buffered and refuse further writes; returns the last acked txid."""
        if not self._closed:
            acked = await self.flush()
            self._closed = True
            return acked
        return self._acked_txid

    def abort(self) -> None:
        """Drop what is buffered and refuse further writes (batches in flight still finish)."""
        self._closed = True
        self._buf = []
        self._buf_bytes = 0
