"""HDFS's DataChecksum: the checksum header and the per-chunk sums of block data (design §B.2).

A header is 5 bytes: the type (0 NULL, 1 CRC32, 2 CRC32C) and bytesPerChecksum as a
big-endian int. The sums of n bytes are one 4-byte big-endian CRC per chunk of
bytesPerChecksum bytes, the last chunk partial; the NULL type has no sums. Chunks are the
block's: data starting at a block offset inside a chunk has a short first chunk. This is the
one home of chunk sums: the storage, the transfer codec and the xceiver all use it.
"""

from __future__ import annotations

import functools
import struct
import zlib
from collections.abc import Callable
from dataclasses import dataclass

import crc32c
import numpy as np
import numpy.typing as npt

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


def chunk_bounds(offset: int, length: int, bytes_per_checksum: int) -> list[tuple[int, int]]:
    """(start, end) within the data of each chunk of length bytes at block offset `offset`.

    Chunks end on multiples of bytes_per_checksum in the block, so data that starts inside
    a chunk (an append, a packet after hflush) has a short first chunk.
    """
    if bytes_per_checksum <= 0:
        raise ValueError(f"bytesPerChecksum must be positive, not {bytes_per_checksum}")
    bounds = []
    pos = 0
    first = bytes_per_checksum - offset % bytes_per_checksum
    while pos < length:
        end = min(pos + (first if pos == 0 else bytes_per_checksum), length)
        bounds.append((pos, end))
        pos = end
    return bounds


def sums_length(offset: int, length: int, bytes_per_checksum: int) -> int:
    """Bytes of 4-byte sums that cover length bytes at block offset `offset`."""
    if bytes_per_checksum <= 0:
        raise ValueError(f"bytesPerChecksum must be positive, not {bytes_per_checksum}")
    if length <= 0:
        return 0
    first = bytes_per_checksum - offset % bytes_per_checksum
    if length <= first:
        return CHECKSUM_SIZE
    return CHECKSUM_SIZE * (1 + num_chunks(length - first, bytes_per_checksum))


# A packet's chunks: the slices and the packer of a chunk-aligned length up to this are
# kept, so a 64 KiB packet's 128 sums cost one library call each and nothing more.
_CACHED_SLICES_UP_TO = 1024 * 1024


@functools.lru_cache(maxsize=64)
def _aligned(length: int, bpc: int) -> tuple[tuple[slice, ...], struct.Struct]:
    slices = tuple(slice(i, i + bpc) for i in range(0, length, bpc))
    return slices, struct.Struct(f">{len(slices)}I")


def _sums(
    func: Callable[[memoryview], int], data: bytes | memoryview, bpc: int, offset: int = 0
) -> bytes:
    view = memoryview(data).cast("B")
    if offset % bpc == 0 and len(view) <= _CACHED_SLICES_UP_TO:
        slices, packer = _aligned(len(view), bpc)
        call = crc32c.crc32c if func is _crc32c else func
        return packer.pack(*map(call, map(view.__getitem__, slices)))
    if offset % bpc == 0:
        crcs = [func(view[i : i + bpc]) for i in range(0, len(view), bpc)]
    else:
        crcs = [func(view[s:e]) for s, e in chunk_bounds(offset, len(view), bpc)]
    return struct.pack(f">{len(crcs)}I", *crcs)


def chunk_sums(
    data: bytes | memoryview, bytes_per_checksum: int = DEFAULT_BYTES_PER_CHECKSUM, offset: int = 0
) -> bytes:
    """The CRC32C sums of the chunks of data at block offset `offset`, 4 big-endian bytes
    each: the first chunk ends at the block's next chunk boundary, the last may be partial."""
    if bytes_per_checksum <= 0:
        raise ValueError(f"bytesPerChecksum must be positive, not {bytes_per_checksum}")
    return _sums(_crc32c, data, bytes_per_checksum, offset)


def first_bad_chunk(
    data: bytes | memoryview,
    sums: bytes | memoryview,
    bytes_per_checksum: int = DEFAULT_BYTES_PER_CHECKSUM,
    offset: int = 0,
) -> int | None:
    """The block offset of the first chunk of data (at block offset `offset`) whose CRC32C
    differs from sums, or None; ChecksumError when sums is not one sum per chunk."""
    view = memoryview(data).cast("B")
    want = sums_length(offset, len(view), bytes_per_checksum)
    if len(sums) != want:
        raise ChecksumError(
            f"data at offset {offset} has {len(sums)} checksum bytes for {len(view)} data "
            f"bytes; expected {want} ({bytes_per_checksum} bytes per checksum)",
            offset=offset,
        )
    got = _sums(_crc32c, view, bytes_per_checksum, offset)
    sums_b = bytes(sums)
    if got == sums_b:
        return None
    bounds = chunk_bounds(offset, len(view), bytes_per_checksum)
    for i, (start, _) in enumerate(bounds):
        if got[4 * i : 4 * i + 4] != sums_b[4 * i : 4 * i + 4]:
            return offset + start
    raise AssertionError("sums differ but no chunk does")  # pragma: no cover


# The packet-wide check (sums_agree): a CRC32C register shifted over n zero bytes is a
# linear map A_n, and CRC(a + b) = A_len(b)(CRC(a)) ^ CRC(b) (zlib's crc32_combine), so the
# CRC of k whole chunks is the XOR of A_bpc^(k-1-i)(sum_i). Tables of A_bpc^j applied to each
# byte of a sum, for j below this, make that one numpy gather.
_COMBINE_CHUNKS = 128


def _shift_columns(length: int) -> npt.NDArray[np.uint32]:
    """A_length's action on the 32 one-bit registers (its matrix's columns)."""
    zeros = bytes(length)
    base = crc32c.crc32c(zeros, 0)
    return np.array([crc32c.crc32c(zeros, 1 << k) ^ base for k in range(32)], dtype=np.uint32)


def _shift(
    columns: npt.NDArray[np.uint32], values: npt.NDArray[np.uint32]
) -> npt.NDArray[np.uint32]:
    """columns' linear map applied to each of values."""
    out = np.zeros_like(values)
    for k in range(32):
        out ^= columns[k] * ((values >> np.uint32(k)) & np.uint32(1))
    return out


@functools.lru_cache(maxsize=4)
def _combine_table(bpc: int) -> npt.NDArray[np.uint32]:
    """Flat table: entry ((j*4 + p)*256 + v) is A_bpc^j of byte v at big-endian position p."""
    columns = _shift_columns(bpc)
    byte = np.arange(256, dtype=np.uint32)
    step = np.stack([byte << np.uint32(8 * (3 - p)) for p in range(4)]).reshape(-1)
    table = np.empty((_COMBINE_CHUNKS, 4 * 256), dtype=np.uint32)
    for j in range(_COMBINE_CHUNKS):
        table[j] = step
        step = _shift(columns, step)
    return table.reshape(-1)


@functools.lru_cache(maxsize=256)
def _combine_index(k: int) -> npt.NDArray[np.intp]:
    """Where in the table each byte of k sums starts: sum i uses A^(k-1-i)."""
    j = np.arange(k - 1, -1, -1, dtype=np.intp)
    return (j[:, None] * 4 + np.arange(4, dtype=np.intp)[None, :]) * 256


def _combined(sums: bytes | memoryview, bpc: int) -> int:
    """The CRC32C of whole chunks of bpc bytes, from their big-endian sums."""
    k = len(sums) // CHECKSUM_SIZE
    raw = np.frombuffer(sums, dtype=np.uint8).reshape(k, CHECKSUM_SIZE)
    return int(np.bitwise_xor.reduce(_combine_table(bpc).take(_combine_index(k) + raw), axis=None))


def sums_agree(
    data: bytes | memoryview,
    sums: bytes | memoryview,
    bytes_per_checksum: int = DEFAULT_BYTES_PER_CHECKSUM,
    offset: int = 0,
) -> bool:
    """Whether data's chunk sums combine to the CRC32C of all of data: every chunk checked at
    once, in two library calls (design §B.4); chunk by chunk when the combination does not
    apply. ChecksumError when sums is not one sum per chunk."""
    view = memoryview(data).cast("B")
    bpc = bytes_per_checksum
    k = sums_length(offset, len(view), bpc) // CHECKSUM_SIZE
    if len(sums) != k * CHECKSUM_SIZE:
        raise ChecksumError(
            f"data at offset {offset} has {len(sums)} checksum bytes for {len(view)} data "
            f"bytes; expected {k * CHECKSUM_SIZE} ({bpc} bytes per checksum)",
            offset=offset,
        )
    if k == 0:
        return True
    if offset % bpc or k > _COMBINE_CHUNKS:
        return first_bad_chunk(view, sums, bpc, offset) is None
    tail = len(view) - (k - 1) * bpc  # the last chunk's length, bpc when whole
    if tail == bpc:
        want = _combined(sums, bpc)
    else:
        head = _combined(sums[: (k - 1) * CHECKSUM_SIZE], bpc) if k > 1 else 0
        zeros = bytes(tail)  # A_tail(head): the whole chunks shifted over the short one
        shifted = crc32c.crc32c(zeros, head) ^ crc32c.crc32c(zeros, 0) if k > 1 else 0
        want = shifted ^ int.from_bytes(sums[-CHECKSUM_SIZE:], "big")
    return want == crc32c.crc32c(view)


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
    want = sums_length(offset, len(view), bpc)
    if len(sums) != want:
        raise ChecksumError(
            f"{len(sums)} bytes of {name} sums for {len(view)} bytes of data at offset "
            f"{offset}: expected {want} ({bpc} bytes per checksum)",
            offset=offset,
        )
    got = _sums(func, view, bpc, offset)
    if got == bytes(sums):
        return
    sums_b = bytes(sums)
    starts = [s for s, _ in chunk_bounds(offset, len(view), bpc)]
    for i in range(0, len(got), CHECKSUM_SIZE):
        if got[i : i + CHECKSUM_SIZE] != sums_b[i : i + CHECKSUM_SIZE]:
            at = offset + starts[i // CHECKSUM_SIZE]
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

    def compute(self, data: bytes | memoryview, *, offset: int = 0) -> bytes:
        """The sums of the chunks of data at block offset `offset` (empty for NULL)."""
        if self.type == CHECKSUM_NULL:
            return b""
        return _sums(_FUNCS[self.type], data, self.bytes_per_checksum, offset)

    def verify(
        self, data: bytes | memoryview, sums: bytes | memoryview, *, offset: int = 0
    ) -> None:
        """Check data starting at block offset `offset` against its sums (NULL: nothing)."""
        func = _FUNCS.get(self.type)
        _verify(func, self.name, data, sums, self.bytes_per_checksum, offset)
