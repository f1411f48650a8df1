"""HDFS's DataChecksum: the checksum header and the per-chunk sums of block data (design §B.2).

A header is 5 bytes: the type (0 NULL, 1 CRC32, 2 CRC32C) and bytesPerChecksum as a
big-endian int. The sums of n bytes are one 4-byte big-endian CRC per chunk of
bytesPerChecksum bytes, the last chunk partial; the NULL type has no sums.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Callable
from dataclasses import dataclass

import crc32c

from qjm.errors import QjmError

CHECKSUM_NULL = 0
CHECKSUM_CRC32 = 1
CHECKSUM_CRC32C = 2
TYPE_NAMES = {CHECKSUM_NULL: "NULL", CHECKSUM_CRC32: "CRC32", CHECKSUM_CRC32C: "CRC32C"}
HEADER_LEN = 5
CHECKSUM_SIZE = 4
DEFAULT_BYTES_PER_CHECKSUM = 512
# A chunk larger than this is refused in a header: no real writer uses one, and a crafted
# header must not make a reader allocate gigabytes per chunk.
MAX_BYTES_PER_CHECKSUM = 16 * 1024 * 1024

_HEADER = struct.Struct(">bi")


class ChecksumError(QjmError):
    """Data that does not match its sums, or a checksum header that cannot be used."""

    def __init__(self, message: str, *, offset: int = -1) -> None:
        super().__init__(message)
        self.offset = offset


def _crc32c(view: memoryview) -> int:
    return int(crc32c.crc32c(view))


def _crc32(view: memoryview) -> int:
    return zlib.crc32(view)


_FUNCS: dict[int, Callable[[memoryview], int]] = {
    CHECKSUM_CRC32C: _crc32c,
    CHECKSUM_CRC32: _crc32,
}


def num_chunks(length: int, bytes_per_checksum: int) -> int:
    """How many chunks (and so sums) cover length bytes."""
    return -(-length // bytes_per_checksum)


def _sums(func: Callable[[memoryview], int], data: bytes | memoryview, bpc: int) -> bytes:
    view = memoryview(data).cast("B")
    n = len(view)
    crcs = [func(view[i : i + bpc]) for i in range(0, n, bpc)]
    return struct.pack(f">{len(crcs)}I", *crcs)


def chunk_sums(data: bytes | memoryview, bytes_per_checksum: int) -> bytes:
    """The CRC32C sums of data's chunks, 4 big-endian bytes each, the last chunk partial."""
    if bytes_per_checksum <= 0:
        raise ValueError(f"bytesPerChecksum must be positive, not {bytes_per_checksum}")
    return _sums(_crc32c, data, bytes_per_checksum)


def _verify(
    func: Callable[[memoryview], int] | None,
    name: str,
    data: bytes | memoryview,
    sums: bytes | memoryview,
    bpc: int,
    offset: int,
) -> None:
    if func is None:
        return
    view = memoryview(data).cast("B")
    want = num_chunks(len(view), bpc) * CHECKSUM_SIZE
    if len(sums) != want:
        raise ChecksumError(
            f"{len(sums)} bytes of {name} sums for {len(view)} bytes of data at offset "
            f"{offset}: expected {want} ({bpc} bytes per checksum)",
            offset=offset,
        )
    got = _sums(func, view, bpc)
    if got == bytes(sums):
        return
    sums_b = bytes(sums)
    for i in range(0, len(got), CHECKSUM_SIZE):
        if got[i : i + CHECKSUM_SIZE] != sums_b[i : i + CHECKSUM_SIZE]:
            at = offset + (i // CHECKSUM_SIZE) * bpc
            stored = int.from_bytes(sums_b[i : i + CHECKSUM_SIZE], "big")
            computed = int.from_bytes(got[i : i + CHECKSUM_SIZE], "big")
            raise ChecksumError(
                f"{name} mismatch in the chunk at byte offset {at}: stored {stored:#010x}, "
                f"computed {computed:#010x}",
                offset=at,
            )
    raise AssertionError("sums differ but no chunk does")  # pragma: no cover


def verify(
    data: bytes | memoryview,
    sums: bytes | memoryview,
    bytes_per_checksum: int,
    *,
    offset: int = 0,
) -> None:
    """Check data (starting at block offset `offset`) against its CRC32C sums; raise naming
    the offset of the first chunk that differs."""
    _verify(_crc32c, "CRC32C", data, sums, bytes_per_checksum, offset)


@dataclass(frozen=True)
class DataChecksum:
    """A checksum type and chunk size, as HDFS's DataChecksum."""

    type: int = CHECKSUM_CRC32C
    bytes_per_checksum: int = DEFAULT_BYTES_PER_CHECKSUM

    @property
    def checksum_size(self) -> int:
        """Bytes of one chunk's sum: 4, or 0 for NULL."""
        return 0 if self.type == CHECKSUM_NULL else CHECKSUM_SIZE

    @property
    def name(self) -> str:
        """The type's name as HDFS spells it."""
        return TYPE_NAMES.get(self.type, f"type {self.type}")

    def header(self) -> bytes:
        """The 5-byte header: type, then bytesPerChecksum big-endian."""
        return _HEADER.pack(self.type, self.bytes_per_checksum)

    @classmethod
    def from_header(cls, raw: bytes | memoryview, where: str = "checksum header") -> DataChecksum:
        """Parse a 5-byte header; raise naming `where` and the bad field."""
        if len(raw) < HEADER_LEN:
            raise ChecksumError(f"{where}: {len(raw)} bytes, a checksum header needs {HEADER_LEN}")
        kind, bpc = _HEADER.unpack_from(raw)
        if kind not in TYPE_NAMES:
            raise ChecksumError(f"{where}: unknown checksum type {kind}")
        if not 0 < bpc <= MAX_BYTES_PER_CHECKSUM:
            raise ChecksumError(
                f"{where}: bytesPerChecksum {bpc} is out of range 1..{MAX_BYTES_PER_CHECKSUM}"
            )
        return cls(kind, bpc)

    def sums_length(self, data_length: int) -> int:
        """Bytes of sums that cover data_length bytes."""
        return num_chunks(data_length, self.bytes_per_checksum) * self.checksum_size

    def compute(self, data: bytes | memoryview) -> bytes:
        """The sums of data's chunks (empty for NULL)."""
        if self.type == CHECKSUM_NULL:
            return b""
        return _sums(_FUNCS[self.type], data, self.bytes_per_checksum)

    def verify(
        self, data: bytes | memoryview, sums: bytes | memoryview, *, offset: int = 0
    ) -> None:
        """Check data starting at block offset `offset` against its sums (NULL: nothing)."""
        func = _FUNCS.get(self.type)
        _verify(func, self.name, data, sums, self.bytes_per_checksum, offset)
