"""FsDataset as the transfer server's ReplicaStore (design §B.13).

FsDataset's calls block on the disk; every one that touches a file runs on a bounded thread
pool, so the event loop only waits on futures. The xceiver writes chunk-aligned: it hands a
packet's new bytes from the start of the chunk that holds the first of them, with that
chunk's bytes already on disk in front and the sums of the block's chunks; FsDataset skips
what is already on disk and writes the rest and the sums from that chunk on.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import BinaryIO, TypeVar

from qjm.datanode import dataset as fsd
from qjm.datanode import replica_store as rs
from qjm.datanode.replica import ReplicaInfo, ReplicaState
from qjm.hdfs.checksum import CHECKSUM_CRC32C, DataChecksum

T = TypeVar("T")
DEFAULT_DISK_THREADS = 16


def _block(r: ReplicaInfo, num_bytes: int | None = None) -> rs.ExtendedBlock:
    return rs.ExtendedBlock(
        r.bpid, r.block_id, r.genstamp, r.num_bytes if num_bytes is None else num_bytes
    )


class DiskPool:
    """A bounded pool of threads for the DataNode's blocking disk calls."""

    def __init__(self, threads: int = DEFAULT_DISK_THREADS) -> None:
        self.executor = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="dn-disk")

    async def run(self, fn: Callable[..., T], *args: object) -> T:
        """fn(*args) on a disk thread."""
        return await asyncio.get_running_loop().run_in_executor(self.executor, fn, *args)

    def shutdown(self) -> None:
        """Stop taking work; running calls finish."""
        self.executor.shutdown(wait=True, cancel_futures=True)


class FsReplicaWriter:
    """A FsDataset writer as the xceiver's ReplicaWriter."""

    def __init__(self, pool: DiskPool, writer: fsd.ReplicaWriter) -> None:
        self._pool = pool
        self._w = writer

    @property
    def block(self) -> rs.ExtendedBlock:
        """The block with its current generation stamp and bytes written."""
        return _block(self._w.replica)

    @property
    def bytes_on_disk(self) -> int:
        """Data bytes written so far."""
        return self._w.bytes_on_disk

    @property
    def bytes_per_checksum(self) -> int:
        """Chunk size of the replica's checksums."""
        return self._w.replica.checksum.bytes_per_checksum

    async def write(self, offset: int, data: bytes, sums: bytes) -> None:
        """Write data at offset with the sums of the block's chunks it touches."""
        await self._pool.run(self._w.write_packet, offset, data, sums)

    async def write_parts(
        self, offset: int, parts: Sequence[bytes | memoryview], sums: bytes | memoryview
    ) -> None:
        """write() of the parts one after the other, in one pwritev on a disk thread."""
        await self._pool.run(self._w.append_parts, offset, parts, sums)

    async def read(self, offset: int, length: int) -> bytes:
        """Data already written."""
        return await self._pool.run(self._w.read, offset, length)

    async def flush(self, *, sync: bool) -> None:
        """hflush: FsDataset writes with pwrite, so the OS has it; hsync fsyncs too."""
        if sync:
            await self._pool.run(self._w.sync)

    def set_bytes_acked(self, length: int) -> None:
        """Bytes every pipeline node acknowledged: the visible length."""
        self._w.set_bytes_acked(length)

    async def finalize(self) -> rs.ExtendedBlock:
        """Finalize at the bytes on disk."""
        return _block(await self._pool.run(self._w.finalize))

    async def close(self) -> None:
        """Release the writer; the replica stays as it is."""
        await self._pool.run(self._w.close)

    async def to_rbw(self) -> None:
        """A TRANSFER_RBW copy received whole becomes RBW (see the protocol)."""
        await self._pool.run(self._w.to_rbw)

    async def discard(self) -> None:
        """Release the writer; a transfer's unfinished copy is deleted (see the protocol)."""
        await self._pool.run(self._w.discard)


class FsReplicaReader:
    """A FsDataset reader as the xceiver's ReplicaReader."""

    def __init__(self, pool: DiskPool, reader: fsd.ReplicaReader) -> None:
        self._pool = pool
        self._r = reader
        self._file: BinaryIO | None = None

    @property
    def block(self) -> rs.ExtendedBlock:
        """The block with its generation stamp and visible length."""
        return _block(self._r.replica, self._r.visible_length)

    @property
    def finalized(self) -> bool:
        """Whether the replica was finalized when opened."""
        return self._r.replica.state == ReplicaState.FINALIZED

    @property
    def visible_length(self) -> int:
        """Bytes a reader may see."""
        return self._r.visible_length

    @property
    def checksum_type(self) -> int:
        """The meta header's checksum type."""
        return self._r.checksum.type

    @property
    def bytes_per_checksum(self) -> int:
        """The meta header's chunk size."""
        return self._r.checksum.bytes_per_checksum

    async def read_data(self, offset: int, length: int) -> bytes:
        """length visible bytes from offset."""
        return await self._pool.run(self._r.read, offset, length)

    async def read_sums(self, first_chunk: int, count: int) -> bytes:
        """The sums of count chunks from first_chunk (a chunk cut by the visible length gets
        the sum of its visible part)."""
        bpc = self.bytes_per_checksum
        start = first_chunk * bpc
        end = min((first_chunk + count) * bpc, self.visible_length)
        return await self._pool.run(self._r.sums, start, end)

    def data_file(self) -> BinaryIO | None:
        """The block file, opened on a duplicate of the reader's descriptor (for sendfile)."""
        if self._file is None:
            self._file = os.fdopen(os.dup(self._r.data_fd), "rb", buffering=0)
        return self._file

    async def close(self) -> None:
        """Close the files."""
        if self._file is not None:
            self._file.close()
            self._file = None
        self._r.close()


class FsReplicaStore:
    """FsDataset as the xceiver's ReplicaStore: every disk call on the DiskPool."""

    def __init__(self, dataset: fsd.FsDataset, pool: DiskPool) -> None:
        self.dataset = dataset
        self.pool = pool

    def _checksum(self, bytes_per_checksum: int) -> DataChecksum:
        return DataChecksum(CHECKSUM_CRC32C, bytes_per_checksum)

    async def create_rbw(
        self, block: rs.ExtendedBlock, bytes_per_checksum: int
    ) -> rs.ReplicaWriter:
        """A new replica being written (PIPELINE_SETUP_CREATE)."""
        w = await self.pool.run(self._create, block, bytes_per_checksum, False)
        return FsReplicaWriter(self.pool, w)

    async def create_temporary(
        self, block: rs.ExtendedBlock, bytes_per_checksum: int
    ) -> rs.ReplicaWriter:
        """A transfer's copy (TEMPORARY until finalized)."""
        w = await self.pool.run(self._create, block, bytes_per_checksum, True)
        return FsReplicaWriter(self.pool, w)

    def _create(self, block: rs.ExtendedBlock, bpc: int, temporary: bool) -> fsd.ReplicaWriter:
        return self.dataset.create_rbw(
            block.pool_id,
            block.block_id,
            block.generation_stamp,
            temporary=temporary,
            checksum=self._checksum(bpc),
        )

    async def append(
        self, block: rs.ExtendedBlock, new_generation_stamp: int, expected_length: int
    ) -> rs.ReplicaWriter:
        """Reopen a finalized replica for append under a new generation stamp."""

        def call() -> fsd.ReplicaWriter:
            return self.dataset.append(
                block.pool_id,
                block.block_id,
                block.generation_stamp,
                new_generation_stamp,
                expected_length=expected_length,
            )

        return FsReplicaWriter(self.pool, await self.pool.run(call))

    async def recover_rbw(
        self, block: rs.ExtendedBlock, new_generation_stamp: int, min_bytes: int, max_bytes: int
    ) -> rs.ReplicaWriter:
        """Resume a replica being written after a pipeline failure."""
        w = await self.pool.run(
            self.dataset.recover_rbw,
            block.pool_id,
            block.block_id,
            block.generation_stamp,
            new_generation_stamp,
            min_bytes,
            max_bytes,
        )
        return FsReplicaWriter(self.pool, w)

    async def recover_close(
        self, block: rs.ExtendedBlock, new_generation_stamp: int, expected_length: int
    ) -> rs.ExtendedBlock:
        """Finalize a replica under a new generation stamp (close recovery)."""
        r = await self.pool.run(
            self.dataset.recover_close,
            block.pool_id,
            block.block_id,
            block.generation_stamp,
            new_generation_stamp,
            expected_length,
        )
        return _block(r)

    async def open_reader(self, block: rs.ExtendedBlock) -> rs.ReplicaReader:
        """An open replica of the block to read."""
        r = await self.pool.run(
            self.dataset.open_reader, block.pool_id, block.block_id, block.generation_stamp
        )
        return FsReplicaReader(self.pool, r)

    async def invalidate(self, block: rs.ExtendedBlock) -> ReplicaInfo:
        """Delete a replica (DNA_INVALIDATE)."""
        return await self.pool.run(
            self.dataset.invalidate, block.pool_id, block.block_id, block.generation_stamp
        )
