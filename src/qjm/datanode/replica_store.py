"""What the DataXceiver needs from a DataNode's storage, shaped like HDFS's FsDatasetSpi.

The xceiver (design §B.3, §B.4) writes through a ReplicaWriter (HDFS's ReplicaInPipeline
and its output streams) and reads through a ReplicaReader (getBlockInputStream with the
meta file). Writes are chunk-aligned: the xceiver recomputes a partial last chunk's sum
itself, so a store only ever stores whole-chunk sums at a chunk's slot.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import BinaryIO, Protocol

from qjm.errors import QjmError


@dataclass(frozen=True)
class ExtendedBlock:
    """A block as the NameNode names it: pool, id, generation stamp, length."""

    pool_id: str
    block_id: int
    generation_stamp: int
    num_bytes: int = 0

    def __str__(self) -> str:
        return f"{self.pool_id}:blk_{self.block_id}_{self.generation_stamp}"


class ReplicaError(QjmError):
    """A replica operation the storage refused (names the block and why)."""


class ReplicaNotFoundError(ReplicaError):
    """No replica of the block (or none with that generation stamp)."""


class ReplicaAlreadyExistsError(ReplicaError):
    """A replica of the block is already there (answered as ERROR_EXISTS)."""


class ReplicaWriter(Protocol):
    """A replica being written (RBW or temporary): HDFS's ReplicaInPipeline."""

    @property
    def block(self) -> ExtendedBlock:
        """The block with its current generation stamp."""
        ...

    @property
    def bytes_on_disk(self) -> int:
        """Data bytes written so far."""
        ...

    @property
    def bytes_per_checksum(self) -> int:
        """Chunk size of the replica's checksums."""
        ...

    async def write(self, offset: int, data: bytes, sums: bytes) -> None:
        """Write data at a chunk-aligned offset with one 4-byte sum per chunk (the last may
        be partial); bytes past offset+len(data) are cut off."""
        ...

    async def write_parts(
        self, offset: int, parts: Sequence[bytes | memoryview], sums: bytes | memoryview
    ) -> None:
        """write() of the parts' bytes one after the other, without joining them first."""
        ...

    async def read(self, offset: int, length: int) -> bytes:
        """Data already written (the xceiver reads a partial chunk to extend its sum)."""
        ...

    async def flush(self, *, sync: bool) -> None:
        """Hand what was written to the OS (hflush), fsync data and meta too when sync."""
        ...

    def set_bytes_acked(self, length: int) -> None:
        """Bytes every pipeline node has acknowledged: what readers may see."""
        ...

    async def finalize(self) -> ExtendedBlock:
        """Make the replica finalized at its bytes on disk (FsDatasetSpi.finalizeBlock)."""
        ...

    async def close(self) -> None:
        """Release the writer without finalizing (the replica stays as it is)."""
        ...

    async def to_rbw(self) -> None:
        """A transfer's copy (TRANSFER_RBW) received whole becomes a replica being written,
        for the client's pipeline recovery to take over (convertTemporaryToRbw)."""
        ...

    async def discard(self) -> None:
        """Release the writer; a transfer's copy (TEMPORARY) that was not finalized is
        deleted, any other replica stays as it is."""
        ...


class ReplicaReader(Protocol):
    """An open replica to read: data and sums of a chunk-aligned range."""

    @property
    def block(self) -> ExtendedBlock:
        """The block with its generation stamp and visible length as num_bytes."""
        ...

    @property
    def finalized(self) -> bool:
        """Whether the replica is finalized (else being written)."""
        ...

    @property
    def visible_length(self) -> int:
        """Bytes a reader may see: the length when finalized, the acked bytes when RBW."""
        ...

    @property
    def checksum_type(self) -> int:
        """The meta header's checksum type (ChecksumTypeProto: 2 is CRC32C)."""
        ...

    @property
    def bytes_per_checksum(self) -> int:
        """The meta header's chunk size."""
        ...

    async def read_data(self, offset: int, length: int) -> bytes:
        """length data bytes from offset."""
        ...

    async def read_sums(self, first_chunk: int, count: int) -> bytes:
        """The 4-byte sums of count chunks from first_chunk."""
        ...

    def data_file(self) -> BinaryIO | None:
        """The open block file, for zero-copy sends; None when the data is not in a file."""
        ...

    async def close(self) -> None:
        """Release the files."""
        ...


class ReplicaStore(Protocol):
    """A DataNode's replicas: HDFS's FsDatasetSpi, the part the xceiver calls."""

    async def create_rbw(self, block: ExtendedBlock, bytes_per_checksum: int) -> ReplicaWriter:
        """A new replica being written (PIPELINE_SETUP_CREATE); ReplicaAlreadyExistsError."""
        ...

    async def create_temporary(
        self, block: ExtendedBlock, bytes_per_checksum: int
    ) -> ReplicaWriter:
        """A replica a transfer writes (TRANSFER_RBW, TRANSFER_FINALIZED, replication)."""
        ...

    async def append(
        self, block: ExtendedBlock, new_generation_stamp: int, expected_length: int
    ) -> ReplicaWriter:
        """Reopen a finalized replica for append under a new generation stamp."""
        ...

    async def recover_rbw(
        self, block: ExtendedBlock, new_generation_stamp: int, min_bytes: int, max_bytes: int
    ) -> ReplicaWriter:
        """Resume a replica being written after a pipeline failure (streaming recovery)."""
        ...

    async def recover_close(
        self, block: ExtendedBlock, new_generation_stamp: int, expected_length: int
    ) -> ExtendedBlock:
        """Finalize a replica under a new generation stamp (close recovery)."""
        ...

    async def open_reader(self, block: ExtendedBlock) -> ReplicaReader:
        """An open replica of the block to read; ReplicaNotFoundError."""
        ...
