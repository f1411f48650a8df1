"""An in-memory ReplicaStore for the DataXceiver's unit tests (no disk, same contract)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import BinaryIO

from qjm.datanode.replica_store import (
    ExtendedBlock,
    ReplicaAlreadyExistsError,
    ReplicaNotFoundError,
    ReplicaReader,
    ReplicaWriter,
)
from qjm.hdfs.datatransfer import CHECKSUM_CRC32C


@dataclass
class MemReplica:
    """One replica: its data, one sum per chunk, its state."""

    block: ExtendedBlock
    bytes_per_checksum: int
    data: bytearray = field(default_factory=bytearray)
    sums: bytearray = field(default_factory=bytearray)
    finalized: bool = False
    bytes_acked: int = 0
    flushes: int = 0
    syncs: int = 0


class MemWriter:
    """A ReplicaWriter over a MemReplica."""

    def __init__(self, replica: MemReplica, store: MemStore | None = None) -> None:
        self.replica = replica
        self.store = store  # set for a transfer's copy: discard() removes it

    @property
    def block(self) -> ExtendedBlock:
        return self.replica.block

    @property
    def bytes_on_disk(self) -> int:
        return len(self.replica.data)

    @property
    def bytes_per_checksum(self) -> int:
        return self.replica.bytes_per_checksum

    async def write(self, offset: int, data: bytes, sums: bytes) -> None:
        r = self.replica
        bpc = r.bytes_per_checksum
        assert offset % bpc == 0, offset
        assert len(sums) == 4 * (-(-len(data) // bpc))
        del r.data[offset:]
        r.data += data
        del r.sums[4 * (offset // bpc) :]
        r.sums += sums

    async def write_parts(
        self, offset: int, parts: Sequence[bytes | memoryview], sums: bytes | memoryview
    ) -> None:
        await self.write(offset, b"".join(parts), bytes(sums))

    async def read(self, offset: int, length: int) -> bytes:
        return bytes(self.replica.data[offset : offset + length])

    async def flush(self, *, sync: bool) -> None:
        self.replica.flushes += 1
        self.replica.syncs += int(sync)

    def set_bytes_acked(self, length: int) -> None:
        self.replica.bytes_acked = max(self.replica.bytes_acked, length)

    async def finalize(self) -> ExtendedBlock:
        r = self.replica
        r.finalized = True
        r.bytes_acked = len(r.data)
        r.block = ExtendedBlock(
            r.block.pool_id, r.block.block_id, r.block.generation_stamp, len(r.data)
        )
        return r.block

    async def close(self) -> None:
        pass

    async def to_rbw(self) -> None:
        pass

    async def discard(self) -> None:
        if self.store is not None and not self.replica.finalized:
            self.store.replicas.pop(self.replica.block.block_id, None)


class MemReader:
    """A ReplicaReader over a MemReplica."""

    def __init__(self, replica: MemReplica) -> None:
        self.replica = replica

    @property
    def block(self) -> ExtendedBlock:
        r = self.replica.block
        return ExtendedBlock(r.pool_id, r.block_id, r.generation_stamp, self.visible_length)

    @property
    def finalized(self) -> bool:
        return self.replica.finalized

    @property
    def visible_length(self) -> int:
        r = self.replica
        return len(r.data) if r.finalized else r.bytes_acked

    @property
    def checksum_type(self) -> int:
        return CHECKSUM_CRC32C

    @property
    def bytes_per_checksum(self) -> int:
        return self.replica.bytes_per_checksum

    async def read_data(self, offset: int, length: int) -> bytes:
        return bytes(self.replica.data[offset : offset + length])

    async def read_sums(self, first_chunk: int, count: int) -> bytes:
        return bytes(self.replica.sums[4 * first_chunk : 4 * (first_chunk + count)])

    def data_file(self) -> BinaryIO | None:
        return None

    async def close(self) -> None:
        pass


class MemStore:
    """Replicas by block id."""

    def __init__(self) -> None:
        self.replicas: dict[int, MemReplica] = {}

    def _get(self, block: ExtendedBlock) -> MemReplica:
        replica = self.replicas.get(block.block_id)
        if replica is None:
            raise ReplicaNotFoundError(f"no replica of {block}")
        return replica

    async def create_rbw(self, block: ExtendedBlock, bytes_per_checksum: int) -> ReplicaWriter:
        if block.block_id in self.replicas:
            raise ReplicaAlreadyExistsError(f"a replica of {block} already exists")
        replica = MemReplica(block, bytes_per_checksum)
        self.replicas[block.block_id] = replica
        return MemWriter(replica)

    async def create_temporary(
        self, block: ExtendedBlock, bytes_per_checksum: int
    ) -> ReplicaWriter:
        writer = await self.create_rbw(block, bytes_per_checksum)
        assert isinstance(writer, MemWriter)
        writer.store = self
        return writer

    async def append(
        self, block: ExtendedBlock, new_generation_stamp: int, expected_length: int
    ) -> ReplicaWriter:
        replica = self._get(block)
        assert replica.finalized and len(replica.data) == expected_length
        replica.finalized = False
        replica.bytes_acked = len(replica.data)
        replica.block = ExtendedBlock(
            block.pool_id, block.block_id, new_generation_stamp, len(replica.data)
        )
        return MemWriter(replica)

    async def recover_rbw(
        self, block: ExtendedBlock, new_generation_stamp: int, min_bytes: int, max_bytes: int
    ) -> ReplicaWriter:
        replica = self._get(block)
        replica.block = ExtendedBlock(block.pool_id, block.block_id, new_generation_stamp)
        return MemWriter(replica)

    async def recover_close(
        self, block: ExtendedBlock, new_generation_stamp: int, expected_length: int
    ) -> ExtendedBlock:
        replica = self._get(block)
        replica.finalized = True
        replica.block = ExtendedBlock(
            block.pool_id, block.block_id, new_generation_stamp, len(replica.data)
        )
        return replica.block

    async def open_reader(self, block: ExtendedBlock) -> ReplicaReader:
        return MemReader(self._get(block))
