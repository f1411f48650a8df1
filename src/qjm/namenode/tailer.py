"""The standby's EditLogTailer: follows the shared journal's committed edits and applies them."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable

from qjm.client.reader import QuorumJournalReader
from qjm.editlog.framing import RawOp
from qjm.editlog.ops import Op, decode_op
from qjm.errors import QjmError, describe_error

log = logging.getLogger("qjm.namenode.tailer")
RETRY_MIN_S = 0.1  # after a failed read, the tailer waits this long, doubling ...
RETRY_MAX_S = 5.0  # ... up to this


class TailerTxidGapError(QjmError):
    """The journal handed the tailer a txid that does not follow the last one applied."""


class EditLogTailer:
    """Applies committed edits from the shared journal, batch by batch, from a txid on.

    apply(txid, op) is called for each op in txid order on the event loop; a batch is
    applied with no await in between, so stop() leaves last_applied exact.
    """

    def __init__(
        self,
        reader: QuorumJournalReader,
        apply: Callable[[int, Op], None],
        last_applied: Callable[[], int],
        *,
        wait_ms: int = 1000,
        apply_lock: asyncio.Lock | None = None,
        on_batch: Callable[[int], None] | None = None,
        on_apply_error: Callable[[BaseException], None] | None = None,
    ) -> None:
        self.reader = reader
        self._apply = apply
        self._last_applied = last_applied
        self.wait_ms = wait_ms
        self.apply_lock = apply_lock or asyncio.Lock()
        self.on_batch = on_batch
        self.on_apply_error = on_apply_error  # an op that cannot be applied: the tailer stops
        self._task: asyncio.Task[None] | None = None
        self.paused: str | None = None  # why nothing is applied now (design §N.5)
        self._resumed = asyncio.Event()
        self._resumed.set()
        self.last_error: str | None = None
        self.batches = 0
        self.txns = 0

    @property
    def running(self) -> bool:
        """True while the tailing task runs."""
        return self._task is not None and not self._task.done()

    def start(self) -> None:
        """Start tailing from the txid after the last applied one."""
        if self.running:
            return
        self._task = asyncio.create_task(self._run(), name="edit-log-tailer")

    def pause(self, why: str) -> None:
        """Apply nothing until resume(): a batch read meanwhile is dropped, not applied."""
        self.paused = why
        self._resumed.clear()

    def resume(self) -> None:
        """Apply again, reading from the txid after the last applied one."""
        self.paused = None
        self._resumed.set()

    async def stop(self) -> None:
        """Stop tailing; every batch is either applied whole or not at all."""
        task, self._task = self._task, None
        if task is None:
            return
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    def apply_batch(self, batch: list[RawOp]) -> int:
        """Decode and apply ops after the last applied txid; returns how many were applied."""
        done = 0
        for raw in batch:
            last = self._last_applied()
            if raw.txid <= last:
                continue  # already applied (a batch that overlaps an earlier read)
            if raw.txid != last + 1:
                raise TailerTxidGapError(
                    f"the shared journal gave txid {raw.txid} after txid {last}: "
                    f"txids {last + 1}-{raw.txid - 1} are missing"
                )
            self._apply(raw.txid, decode_op(raw))
            done += 1
        return done

    async def _run(self) -> None:
        backoff = RETRY_MIN_S
        while True:
            await self._resumed.wait()
            start = self._last_applied() + 1
            try:
                async for batch in self.reader.tail(start, self.wait_ms):
                    if not self._resumed.is_set():
                        break
                    async with self.apply_lock:
                        if not self._resumed.is_set():
                            break  # paused while waiting for the lock
                        try:
                            n = self.apply_batch(batch)
                        except TailerTxidGapError:
                            raise
                        except Exception as e:
                            if self.on_apply_error is None:
                                raise
                            self.last_error = f"cannot apply an edit: {e}"
                            self.on_apply_error(e)
                            return
                    if n:
                        self.batches += 1
                        self.txns += n
                        if self.on_batch is not None:
                            self.on_batch(self._last_applied())
                    self.last_error = None
                    backoff = RETRY_MIN_S
            except asyncio.CancelledError:
                raise
            except TailerTxidGapError as e:
                self.last_error = str(e)
                log.error("edit log tailer: %s; reading again from txid %d", e, start)
            except Exception as e:
                why = describe_error(e)
                if self.last_error != why:
                    log.warning("edit log tailer: reading from txid %d failed: %s", start, why)
                self.last_error = why
            if not self._resumed.is_set():
                continue  # wait for resume(), then read again from the last applied txid
            await asyncio.sleep(backoff)  # retry pause after a failed read, not a sync wait
            backoff = min(backoff * 2, RETRY_MAX_S)
