"""A block's packets handed to the disk in batches, in order, behind the receiver (design §B.4).

The receiver queues each chunk-aligned packet that continues the bytes queued so far
(its data and its already checked sums); one task writes whatever is queued in one call to
the replica, so the disk sees a few large writes instead of one per packet, while the
receiver reads and forwards the next packets. What is queued but not yet written is
bounded: a put waits while more than max_pending bytes are. `written` is the block offset
up to which the replica holds every queued byte; the responder waits on it before it acks
a packet or finalizes, so no ack ever covers a byte the replica does not hold.
"""

from __future__ import annotations

import asyncio
import contextlib

from qjm.datanode.replica_store import ReplicaWriter

DEFAULT_MAX_PENDING = 4 * 1024 * 1024


class WriteBehind:
    """Batched, ordered writes of one replica's packets; acks wait on `written`."""

    def __init__(self, replica: ReplicaWriter, max_pending: int = DEFAULT_MAX_PENDING) -> None:
        self.replica = replica
        self.bpc = replica.bytes_per_checksum
        self.max_pending = max(1, max_pending)
        self.end = replica.bytes_on_disk  # past the last byte queued
        self.written = self.end  # past the last byte the replica holds
        self.batches = 0  # calls to the replica's write
        self._data: list[bytes | memoryview] = []
        self._sums: list[bytes | memoryview] = []
        self._start = self.end  # block offset of the first byte in _data
        self._error: BaseException | None = None
        self._wake = asyncio.Event()
        self._progress = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def can_queue(self, offset: int) -> bool:
        """Whether a packet at offset continues the queued bytes on a chunk boundary."""
        return offset == self.end and offset % self.bpc == 0

    async def put(self, offset: int, data: bytes | memoryview, sums: bytes | memoryview) -> None:
        """Queue a packet's data and its sums (one per chunk); can_queue(offset) must hold.
        Waits while the bytes queued and not yet written exceed the bound."""
        self._raise()
        if not self.can_queue(offset):
            raise ValueError(f"a packet at {offset} does not continue the queued {self.end}")
        if self._task is None:
            self._task = asyncio.create_task(self._run())
        self._data.append(data)
        self._sums.append(sums)
        self.end = offset + len(data)
        self._wake.set()
        while self.end - self.written > self.max_pending:
            await self._wait_progress()

    async def wait_written(self, offset: int) -> None:
        """Return once the replica holds every byte before offset that was queued."""
        while self.written < min(offset, self.end):
            await self._wait_progress()
        self._raise()

    async def drain(self) -> None:
        """Return once every queued byte is written."""
        await self.wait_written(self.end)

    def resync(self) -> None:
        """After a write made directly to the replica (nothing queued): continue from its end."""
        assert not self._data, "resync with packets still queued"
        self.end = self.written = self._start = self.replica.bytes_on_disk

    async def close(self) -> None:
        """Stop the writing task (what is queued and not written is dropped)."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(BaseException):
                await self._task
            self._task = None

    def _raise(self) -> None:
        if self._error is not None:
            raise self._error

    async def _wait_progress(self) -> None:
        self._raise()
        self._progress.clear()
        await self._progress.wait()
        self._raise()

    async def _run(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            if not self._data:
                continue
            data, sums, start = self._data, self._sums, self._start
            self._data, self._sums = [], []
            end = self._start = self.end
            try:
                await self.replica.write_parts(start, data, b"".join(sums))
                await self.replica.flush(sync=False)  # hflush: the OS holds it
            except Exception as exc:  # the receiver and the responder raise it next
                self._error = exc
                self._progress.set()
                return
            self.batches += 1
            self.written = end
            self._progress.set()
