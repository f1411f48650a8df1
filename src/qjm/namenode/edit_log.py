"""FSEditLog: the active NameNode's write-ahead log over the quorum journal and the name dir.

log(op) assigns the next txid and buffers the op for both journals, without waiting;
sync(txid) returns once a majority of JournalNodes hold every op up to txid (and the local
copy is fdatasync'd, while the local journal is enabled). Group commit: a flush carries
everything logged until it starts, and every sync caller whose txid it carries shares it.
Flushes may be pipelined (max_flushes_in_flight > 1): while one awaits its quorum, the
next starts, so new ops do not wait for the previous round trip. The quorum
stream acknowledges batches in order and the local copy is written by one thread in
order, so a flush completes only after every earlier one did: synced_txid only grows,
and sync(txid) returns once every op up to txid is held by a quorum and locally.

A segment starts with OP_START_LOG_SEGMENT and ends with OP_END_LOG_SEGMENT, written here
(the quorum output stream frames whatever it is given). Segments roll after roll_txns
txns, roll_bytes bytes or roll_period_s seconds. While a roll is under way, log() goes on
assigning txids (the next segment's START op has the txid after END) and buffers the ops
until the new segment is open. A roll returns once the new segment's START is synced
(HDFS's startLogSegmentAndWriteHeaderTxn).

A JournalNode that answers again after it missed part of the open segment rejoins at the
next segment, so the log rolls as soon as one does, but never sooner than
readmit_roll_interval_ms after the last such roll (design §N.2).

A failed quorum flush is fatal, as in HDFS: on_fatal is called once, and every later
log() or sync() raises. A writer fenced by a newer epoch gets WriterFencedError naming
both epochs. A failure of the local journal only disables it, with a warning.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from qjm.client.output_stream import QuorumOutputStream
from qjm.client.quorum_call import FencedError, fencing_error
from qjm.client.quorum_journal_manager import QuorumJournalManager
from qjm.config import NameNodeSettings
from qjm.editlog import framing
from qjm.editlog.ops import EndLogSegmentOp, Op, StartLogSegmentOp, encode_body
from qjm.namenode.errors import NamenodeError
from qjm.namenode.journal_check import LocalEditsAheadError
from qjm.namenode.journal_set import LocalJournal
from qjm.namenode.storage import NNStorage

log = logging.getLogger("qjm.namenode.edit_log")

__all__ = [
    "EditLogClosedError",
    "EditLogFatalError",
    "EditLogRefusedError",
    "EditLogStats",
    "FSEditLog",
    "WriterFencedError",
]

# Flushes awaiting their quorum at once (at most the quorum stream's max_in_flight are sent;
# a flush beyond that waits for the stream). More than one pays off where the round trip
# to the JournalNodes leaves CPU idle; on a host whose cores the NameNode shares with its
# JournalNodes and clients, smaller batches cost more CPU per op than the overlap saves
# (measured with benchmarks/nn_rpc.py on 2 cores: 16 clients' create+complete/s fell by
# about 10% with 2 in flight and 20% with 4), so the default is HDFS's one at a time.
DEFAULT_FLUSHES_IN_FLIGHT = 1

_PROMISED = re.compile(r"(?:last promised epoch|last promise)\s+(\d+)")


class EditLogRefusedError(NamenodeError):
    """The edit log refused a call."""


class EditLogClosedError(EditLogRefusedError):
    """log() or sync() while no segment is open for write."""


class EditLogFatalError(EditLogRefusedError):
    """The quorum journal failed; this NameNode may not write again."""


class WriterFencedError(EditLogFatalError, FencedError):
    """A newer writer (a higher epoch) took over the shared journal."""

    def __init__(self, message: str, my_epoch: int | None, newer_epoch: int | None) -> None:
        super().__init__(message)
        self.my_epoch = my_epoch
        self.newer_epoch = newer_epoch


@dataclass
class EditLogStats:
    """Counters of the edit log's work since it was created."""

    txns_logged: int = 0
    sync_calls: int = 0  # sync() calls that had to wait for a flush
    flushes: int = 0  # group commits: one quorum flush (and one local fdatasync) each
    local_syncs: int = 0
    rolls: int = 0
    segments_started: int = 0
    readmit_rolls: int = 0  # rolls made to take back a JournalNode (design §N.2)


class _Flush:
    """One group commit in flight."""

    task: asyncio.Task[None]

    def __init__(self) -> None:
        self.target: int | None = None  # None until it runs: then all logged before it ran


def readmit_roll_at(last_roll: float | None, now: float, interval_s: float) -> float:
    """When to roll to take back a JournalNode that answers again (design §N.2): at once,
    unless the last such roll was less than interval_s ago; then when the interval ends."""
    if last_roll is None:
        return now
    return max(now, last_roll + interval_s)


def fatal_error(e: BaseException, my_epoch: int | None) -> EditLogFatalError:
    """The error an edit log stops with after e: fenced (naming both epochs) or fatal."""
    if isinstance(e, EditLogFatalError):
        return e
    epoch_error = fencing_error(e)
    if epoch_error is not None:
        m = _PROMISED.search(str(epoch_error))
        newer = int(m.group(1)) if m else None
        theirs = f"epoch {newer}" if newer is not None else "a newer epoch"
        return WriterFencedError(
            f"this NameNode's writer epoch {my_epoch} was fenced: a newer writer with "
            f"{theirs} took over the shared edit log, so this NameNode may not write "
            f"({epoch_error})",
            my_epoch,
            newer,
        )
    return EditLogFatalError(f"the quorum journal failed, so this NameNode may not write: {e}")


class FSEditLog:
    """The active NameNode's edit log: the quorum journal (required) and the local one."""

    def __init__(
        self,
        storage: NNStorage,
        qjm: QuorumJournalManager,
        settings: NameNodeSettings,
        on_fatal: Callable[[BaseException], None],
        *,
        local: bool = True,
        clock: Callable[[], float] = time.monotonic,
        max_flushes_in_flight: int = DEFAULT_FLUSHES_IN_FLIGHT,
    ) -> None:
        if max_flushes_in_flight < 1:
            raise ValueError(
                f"max_flushes_in_flight must be at least 1, got {max_flushes_in_flight}"
            )
        self.max_flushes_in_flight = max_flushes_in_flight
        self.storage = storage
        self.qjm = qjm
        self.settings = settings
        self.on_fatal = on_fatal
        self.local = LocalJournal(storage.current, enabled=local)
        self.clock = clock
        self.stats = EditLogStats()
        self._stream: QuorumOutputStream | None = None
        self._segment_start: int | None = None
        self._segment_bytes = 0
        self._next_txid = 1
        self._synced = 0
        self._local_buf: list[bytes] = []
        self._flushes: deque[_Flush] = deque()  # in flight, oldest first
        self._local_writer: ThreadPoolExecutor | None = None  # one thread: writes in order
        self._rolling: asyncio.Future[None] | None = None
        self._roll_end = 0  # while rolling: the old segment's END txid
        self._pending: list[tuple[int, int, bytes]] | None = None  # logged during a roll
        self._fatal: EditLogFatalError | None = None
        self._roll_timer: asyncio.TimerHandle | None = None
        self._auto_roll: asyncio.Task[None] | None = None
        self._quorum_batches_done = 0
        self._closing = False
        self._last_readmit_roll: float | None = None
        self._readmit_timer: asyncio.TimerHandle | None = None
        qjm.loggers.on_node_back = self._readmit_soon
        self.on_readmit_roll: Callable[[], None] = lambda: None  # counted by the NameNode

    def __repr__(self) -> str:
        return (
            f"FSEditLog(segment={self._segment_start}, last={self.last_txid}, "
            f"synced={self._synced}, local={self.local.enabled}, failed={self._fatal is not None})"
        )

    # -- state ---------------------------------------------------------------------------------
    @property
    def last_txid(self) -> int:
        """The txid of the last op logged (synced or not)."""
        return self._next_txid - 1

    @property
    def synced_txid(self) -> int:
        """The highest txid a majority of JournalNodes holds (and the local copy, if enabled)."""
        return self._synced

    @property
    def segment_start_txid(self) -> int | None:
        """The first txid of the open segment, or None when none is open."""
        return self._segment_start

    @property
    def is_open(self) -> bool:
        """True while the log accepts log() calls."""
        return self._fatal is None and (self._stream is not None or self._pending is not None)

    @property
    def failed(self) -> EditLogFatalError | None:
        """The fatal error that stopped the log, if any."""
        return self._fatal

    @property
    def quorum_batches(self) -> int:
        """journal() batches sent to the JournalNodes so far."""
        return self._quorum_batches_done + (self._stream.batches_sent if self._stream else 0)

    def _check_writable(self) -> None:
        if self._fatal is not None:
            raise self._fatal_again()
        if self._closing or (self._stream is None and self._pending is None):
            raise EditLogClosedError("the edit log is not open for write (no open segment)")

    def _fatal_again(self) -> EditLogFatalError:
        """A fresh copy of the fatal error (one instance raised again and again grows)."""
        f = self._fatal
        assert f is not None
        if isinstance(f, WriterFencedError):
            return WriterFencedError(str(f), f.my_epoch, f.newer_epoch)
        return EditLogFatalError(str(f))

    def _fail(self, e: BaseException) -> EditLogFatalError:
        """Stop for good: record the error, drop what is buffered, call on_fatal once."""
        if self._fatal is not None:
            return self._fatal
        err = fatal_error(e, self.qjm.epoch)
        self._fatal = err
        log.error("edit log stopped: %s", err)
        self._cancel_timer()
        self._stop_local_writer()
        if self._stream is not None:
            self._stream.abort()
        try:
            self.on_fatal(err)
        except Exception:  # the callback's own failure must not hide the edit log's
            log.exception("on_fatal callback failed")
        return err

    # -- opening -------------------------------------------------------------------------------
    async def open_for_write(self, first_txid: int) -> None:
        """Start a segment at first_txid on the quorum and locally, its START op synced.

        The caller made the quorum manager the writer first (fenced, recovered).
        """
        self._check_not_failed()
        if self.is_open:
            raise EditLogRefusedError(
                f"the edit log is already open (segment {self._segment_start})"
            )
        if first_txid < 1:
            raise ValueError(f"first txid must be at least 1, got {first_txid}")
        if self.local.enabled:
            try:
                await asyncio.to_thread(self.local.recover, first_txid)
            except LocalEditsAheadError:
                raise  # the journal went backwards: refuse, move nothing (design §N.5)
            except Exception as e:
                self.local.disable(e)
        self._next_txid = first_txid + 1  # first_txid is the START op's
        self._synced = first_txid - 1
        self._pending = []
        try:
            await self._start_segment(first_txid)
        except BaseException:
            self._pending = None
            self.local.abort()
            raise
        await self.sync(first_txid)

    async def _start_segment(self, txid: int) -> None:
        """Open segment txid on both journals; write START and the ops logged meanwhile."""
        if self.local.enabled:
            try:
                await asyncio.to_thread(self.local.open, txid)
            except Exception as e:
                self.local.disable(e)
        try:
            stream = await self.qjm.start_log_segment(txid)
        except Exception as e:
            # Not fatal by itself: open_for_write's caller decides (a roll makes it fatal).
            if fencing_error(e) is not None:
                raise fatal_error(e, self.qjm.epoch) from None
            raise EditLogRefusedError(
                f"cannot start edit log segment {txid} on the quorum journal: {e}"
            ) from None
        self._stream = stream
        self._segment_start = txid
        self._segment_bytes = 0
        self.stats.segments_started += 1
        self._append(txid, StartLogSegmentOp.OPCODE, b"")
        pending, self._pending = self._pending or [], None
        for t, opcode, body in pending:
            self._append(t, opcode, body)
        try:
            await asyncio.to_thread(self.storage.write_seen_txid, txid)
        except OSError as e:
            log.warning("cannot record seen_txid %d in %s: %s", txid, self.storage.root, e)
        self._arm_timer()
        self._maybe_auto_roll()

    # -- logging -------------------------------------------------------------------------------
    def log(self, op: Op, body: bytes | None = None) -> int:
        """Buffer an op (body: its encoding, when made already) under the next txid."""
        self._check_writable()
        return self._log_raw(op.OPCODE, encode_body(op) if body is None else body)

    def _log_raw(self, opcode: int, body: bytes) -> int:
        txid = self._next_txid
        self._next_txid = txid + 1
        self.stats.txns_logged += 1
        if self._pending is not None:
            self._pending.append((txid, opcode, body))
        else:
            self._append(txid, opcode, body)
            self._maybe_auto_roll()
        return txid

    def _append(self, txid: int, opcode: int, body: bytes) -> None:
        stream = self._stream
        assert stream is not None
        try:
            got = stream.write_op(opcode, body)
        except Exception as e:
            raise self._fail(e) from None
        assert got == txid, f"stream gave txid {got}, the edit log {txid}"
        if self.local.enabled:
            self._local_buf.append(framing.encode_op(opcode, txid, body))
        self._segment_bytes += framing.op_size(len(body))

    async def log_sync(self, op: Op) -> int:
        """Log an op and wait until it is synced; returns its txid."""
        txid = self.log(op)
        await self.sync(txid)
        return txid

    # -- syncing -------------------------------------------------------------------------------
    def _check_not_failed(self) -> None:
        if self._fatal is not None:
            self._check_writable()

    async def sync(self, txid: int | None = None) -> None:
        """Return once every op up to txid (default: the last logged) is synced."""
        target = self.last_txid if txid is None else txid
        if target > self.last_txid:
            raise ValueError(f"txid {target} was never logged (last logged {self.last_txid})")
        if self._synced >= target:
            self._check_not_failed()
            return
        self.stats.sync_calls += 1
        while self._synced < target:
            self._check_not_failed()
            flush = self._flush_carrying(target)
            if flush is not None:
                await asyncio.shield(flush.task)
            elif (
                self._rolling is not None
                and self._pending is not None
                and (target > self._roll_end)
            ):
                await asyncio.shield(self._rolling)  # target waits for the next segment
            elif self._stream is None:
                raise EditLogClosedError(
                    f"txid {target} cannot be synced: the edit log was closed or aborted "
                    f"at synced txid {self._synced}"
                )
            elif len(self._flushes) < self.max_flushes_in_flight:
                self._start_flush(self._stream)
            else:
                await asyncio.shield(self._flushes[0].task)  # the pipeline is full

    def _flush_carrying(self, txid: int) -> _Flush | None:
        """The oldest flush in flight that carries txid, if any."""
        for f in self._flushes:
            if f.target is None or f.target >= txid:
                return f
        return None

    def _start_flush(self, stream: QuorumOutputStream) -> None:
        flush = _Flush()
        flush.task = asyncio.get_running_loop().create_task(
            self._flush(stream, flush), name="edit-log-flush"
        )
        self._flushes.append(flush)

    async def _flush(self, stream: QuorumOutputStream, flush: _Flush) -> None:
        """One group commit: everything logged so far to the quorum and the local copy."""
        try:
            await self._flush_body(stream, flush)
        finally:
            self._flushes.remove(flush)  # before any caller waiting for it resumes

    async def _flush_body(self, stream: QuorumOutputStream, flush: _Flush) -> None:
        # Runs after the callers woken with the one that started it logged their ops.
        target = stream.last_written_txid
        flush.target = target
        data = b"".join(self._local_buf)
        self._local_buf = []
        self.stats.flushes += 1
        local_task: asyncio.Future[bool] | None = None
        if data and self.local.enabled:
            if self._local_writer is None:
                self._local_writer = ThreadPoolExecutor(1, thread_name_prefix="edit-log-local")
            local_task = asyncio.get_running_loop().run_in_executor(
                self._local_writer, self._write_local, data
            )
        try:
            await stream.sync(target)
        except Exception as e:
            if local_task is not None:
                local_task.add_done_callback(_retrieve)
            if self._stream is stream:  # else aborted meanwhile: closed, not failed
                self._fail(e)
            return
        if local_task is not None and await local_task:
            self.stats.local_syncs += 1
        if target > self._synced:
            self._synced = target

    def _write_local(self, data: bytes) -> bool:
        """Append and fdatasync on the local writer thread; a failure disables the journal."""
        local = self.local
        if not local.enabled:  # an earlier write failed: the later ones are dropped
            return False
        try:
            local.write_and_sync(data)
        except Exception as e:
            local.disable(e)  # here, so no later write reaches the file first
            return False
        return True

    def _stop_local_writer(self) -> None:
        if self._local_writer is not None:
            self._local_writer.shutdown(wait=False)
            self._local_writer = None

    # -- rolling -------------------------------------------------------------------------------
    def _maybe_auto_roll(self) -> None:
        busy = self._rolling is not None or self._auto_roll is not None or self._closing
        if busy or self._stream is None:
            return
        assert self._segment_start is not None
        txns = self._next_txid - self._segment_start
        if txns >= self.settings.roll_txns or self._segment_bytes >= self.settings.roll_bytes:
            self._start_auto_roll()

    def _start_auto_roll(self) -> None:
        async def run() -> None:
            try:
                await self.roll()
            except EditLogRefusedError as e:
                log.debug("automatic roll failed: %s", e)  # fatal: already reported
            finally:
                self._auto_roll = None

        self._auto_roll = asyncio.get_running_loop().create_task(run(), name="edit-log-roll")

    def _arm_timer(self) -> None:
        self._cancel_timer()
        period = self.settings.roll_period_s
        if period > 0:
            self._roll_timer = asyncio.get_running_loop().call_later(period, self._on_timer)

    def _cancel_timer(self) -> None:
        if self._roll_timer is not None:
            self._roll_timer.cancel()
            self._roll_timer = None
        if self._readmit_timer is not None:
            self._readmit_timer.cancel()
            self._readmit_timer = None

    def _readmit_soon(self) -> None:
        """An out-of-sync JournalNode answers again: roll to take it back (design §N.2), at
        once or when the interval since the last such roll ends."""
        if self._fatal is not None or self._closing or self._stream is None:
            return
        if not self.qjm.loggers.nodes_back:
            return  # taken back meanwhile (a roll for another reason started a segment)
        if self._rolling is not None or self._auto_roll is not None:
            return  # the roll under way starts a segment on every node
        now = self.clock()
        at = readmit_roll_at(
            self._last_readmit_roll, now, self.settings.readmit_roll_interval_ms / 1000
        )
        if at > now:
            if self._readmit_timer is None:
                self._readmit_timer = asyncio.get_running_loop().call_later(
                    at - now, self._on_readmit_timer
                )
            return
        back = ", ".join(str(ch) for ch in self.qjm.loggers.nodes_back)
        log.info("rolling the edit log to take back %s, which answers again", back)
        self._last_readmit_roll = now
        self.stats.readmit_rolls += 1
        self.on_readmit_roll()
        self._start_auto_roll()

    def _on_readmit_timer(self) -> None:
        self._readmit_timer = None
        self._readmit_soon()

    def _on_timer(self) -> None:
        self._roll_timer = None
        if self._fatal is not None or self._stream is None:
            return
        busy = self._rolling is not None or self._auto_roll is not None
        if not busy and self._segment_start is not None and self.last_txid > self._segment_start:
            self._start_auto_roll()
        else:
            self._arm_timer()

    async def roll(self) -> int:
        """End and finalize the open segment, start the next; returns its first txid."""
        self._check_writable()
        if self._rolling is not None:
            await asyncio.shield(self._rolling)
            self._check_writable()
            assert self._segment_start is not None
            return self._segment_start
        self._rolling = asyncio.get_running_loop().create_future()
        try:
            await self._end_segment()
            new_start = self._roll_end + 1
            await self._start_segment(new_start)
            await self.sync(new_start)  # HDFS syncs the new segment's START at once
            self.stats.rolls += 1
            log.info("rolled the edit log: segment %d started", new_start)
            return new_start
        except asyncio.CancelledError:
            self.abort()  # cut short (shutting down): nothing finalized, a new writer recovers
            raise
        except Exception as e:
            raise self._fail(e) from None
        finally:
            self._rolling.set_result(None)
            self._rolling = None
            # A node that answered again while this roll was under way, too late for its
            # new segment, is taken back by the next one.
            asyncio.get_running_loop().call_soon(self._readmit_soon)

    async def _end_segment(self) -> None:
        """Write END, sync it, finalize the segment on both journals (a roll or close)."""
        stream = self._stream
        start = self._segment_start
        assert stream is not None and start is not None
        self._cancel_timer()
        end = self._log_raw(EndLogSegmentOp.OPCODE, b"")
        self._roll_end = end
        self._pending = []  # what is logged from now on waits for the next segment
        self._next_txid = end + 2  # end + 1 is the next segment's START
        await self.sync(end)
        self._check_not_failed()
        await stream.close()
        try:
            await self.qjm.finalize_log_segment(start, end)
        except Exception as e:
            raise self._fail(e) from None
        self._quorum_batches_done += stream.batches_sent
        self._stream = None
        self._segment_start = None
        if self.local.enabled:
            try:
                await asyncio.to_thread(self.local.finalize, end)
            except Exception as e:
                self.local.disable(e)

    # -- purging -------------------------------------------------------------------------------
    async def purge_logs_older_than(self, min_txid_to_keep: int) -> int:
        """Delete finalized segments wholly below a txid, locally and (not waiting) on the
        JournalNodes; returns how many local files went."""
        self._check_writable()
        try:
            await self.qjm.purge_logs_older_than(min_txid_to_keep)
        except Exception as e:
            log.warning(
                "cannot ask the JournalNodes to purge below txid %d: %s", min_txid_to_keep, e
            )
        if not self.local.enabled:
            return 0
        try:
            return await asyncio.to_thread(self.local.files.purge_older_than, min_txid_to_keep)
        except OSError as e:
            log.warning("cannot purge local edits below txid %d: %s", min_txid_to_keep, e)
            return 0

    # -- closing -------------------------------------------------------------------------------
    async def close(self) -> None:
        """End and finalize the open segment on both journals; logging stops."""
        if self._fatal is not None:
            self.abort()
            return
        if self._auto_roll is not None:
            await asyncio.shield(self._auto_roll)
        if self._rolling is not None:
            await asyncio.shield(self._rolling)
        if self._stream is None or self._fatal is not None:
            return
        self._closing = True  # log() refuses from here on; nothing auto-rolls
        try:
            await self._end_segment()
        except Exception as e:
            raise self._fail(e) from None
        finally:
            self._closing = False
            self._pending = None
            self._next_txid = self._roll_end + 1  # no next segment: nothing reserved
            self._cancel_timer()
            self._stop_local_writer()

    def abort(self) -> None:
        """Stop at once: drop what is unsynced, finalize nothing (a new writer recovers)."""
        self._cancel_timer()
        if self._stream is not None:
            self._stream.abort()
            self._quorum_batches_done += self._stream.batches_sent
        self._stream = None
        self._segment_start = None
        self._pending = None
        self._local_buf = []
        self._stop_local_writer()
        try:
            self.local.abort()
        except OSError as e:
            self.local.disable(e)


def _retrieve(fut: asyncio.Future[Any]) -> None:
    if not fut.cancelled():
        fut.exception()
