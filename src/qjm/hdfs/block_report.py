"""HDFS's block lists in a block report (BlockListAsLongs), both encodings (design §B.11).

A storage's replicas travel in StorageBlockReportProto one of two ways:

- **Legacy longs** (`blocks`, repeated uint64): the finalized count, the under-construction
  count, three longs (id, length, genstamp) per finalized replica, a delimiter triple of -1s,
  then four longs (id, length, genstamp, replica state) per replica under construction.
  Negative longs travel as their two's complement. An empty list, and `[0, 0]`, are no
  replicas; with no replica under construction the delimiter may be left out.
- **Buffers** (`numberOfBlocks` and `blocksBuffers`, Hadoop 2.7 and later): per replica the
  block id as a zig-zag varint (sint64), then the length, the genstamp and the state as plain
  varints; the byte string is cut into 64 KiB pieces. A reader masks the length to 48 bits
  and the state to 4 bits (the upper bits are reserved), as HDFS does.

Pure: bytes and ints in, replicas out; each error names what was wrong.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import IntEnum

from qjm.errors import QjmError

CHUNK_SIZE = 64 * 1024  # HDFS's BlockListAsLongs.CHUNK_SIZE: one blocksBuffers piece
NUM_BYTES_MASK = (1 << 48) - 1  # the bits of a length a reader keeps
REPLICA_STATE_MASK = 0xF  # the bits of a state a reader keeps
DEFAULT_MAX_BLOCKS = 1 << 24  # replicas one storage's report may hold
_UINT64 = (1 << 64) - 1
_MIN_BUFFER_BYTES = 4  # the least bytes a replica takes in the buffers encoding
_DELIMITER = (-1, -1, -1)


class ReplicaState(IntEnum):
    """A replica's state on a DataNode (ReplicaStateProto's numbers)."""

    FINALIZED = 0
    RBW = 1
    RWR = 2
    RUR = 3
    TEMPORARY = 4


@dataclass(frozen=True, slots=True)
class ReportedReplica:
    """One replica as a block report lists it."""

    block_id: int  # signed 64-bit (legacy random ids may be negative)
    num_bytes: int
    gen_stamp: int
    state: ReplicaState = ReplicaState.FINALIZED


class BlockReportError(QjmError):
    """A block list that cannot be decoded (or encoded); the message says what is wrong."""

    java_class = "java.io.IOException"


def _signed64(value: int) -> int:
    value &= _UINT64
    return value - (1 << 64) if value >> 63 else value


def _state(value: int, where: str) -> ReplicaState:
    try:
        return ReplicaState(value)
    except ValueError:
        raise BlockReportError(
            f"{where}: replica state {value} is none of "
            f"{', '.join(f'{s.value} ({s.name})' for s in ReplicaState)}"
        ) from None


def _check_replica(r: ReportedReplica, where: str) -> None:
    if not -(1 << 63) <= r.block_id < (1 << 63):
        raise BlockReportError(f"{where}: block id {r.block_id} does not fit in 64 bits")
    if not 0 <= r.num_bytes <= NUM_BYTES_MASK:
        raise BlockReportError(f"{where}: length {r.num_bytes} is not within 0..2^48-1")
    if not 0 <= r.gen_stamp < (1 << 63):
        raise BlockReportError(f"{where}: generation stamp {r.gen_stamp} is negative or too big")


def _check_count(count: int, max_blocks: int, what: str) -> None:
    if count < 0:
        raise BlockReportError(f"{what}: negative replica count {count}")
    if count > max_blocks:
        raise BlockReportError(
            f"{what}: {count} replicas exceed the limit of {max_blocks} in one storage's report"
        )


def decode_longs(
    values: Sequence[int], max_blocks: int = DEFAULT_MAX_BLOCKS
) -> list[ReportedReplica]:
    """The replicas of a legacy block list (uint64 or signed longs, as the wire gives them)."""
    n = len(values)
    if n == 0:
        return []
    if n < 2:
        raise BlockReportError(
            "legacy block list: 1 long, need at least the two counts "
            "(finalized, under construction)"
        )
    finalized, uc = _signed64(values[0]), _signed64(values[1])
    _check_count(finalized, max_blocks, "legacy block list (finalized)")
    _check_count(uc, max_blocks, "legacy block list (under construction)")
    _check_count(finalized + uc, max_blocks, "legacy block list")
    with_delimiter = 2 + 3 * (finalized + 1) + 4 * uc
    without = 2 + 3 * finalized
    if n != with_delimiter and not (uc == 0 and n == without):
        raise BlockReportError(
            f"legacy block list: {n} longs for {finalized} finalized and {uc} under-construction "
            f"replicas, expected {with_delimiter} (2 counts, 3 per finalized, a delimiter of "
            "three -1s, 4 per replica under construction)"
        )
    out: list[ReportedReplica] = []
    pos = 2
    for i in range(finalized):
        r = ReportedReplica(
            _signed64(values[pos]),
            _signed64(values[pos + 1]),
            _signed64(values[pos + 2]),
            ReplicaState.FINALIZED,
        )
        _check_replica(r, f"legacy block list, finalized replica {i}")
        out.append(r)
        pos += 3
    if n == without:
        return out
    delimiter = tuple(_signed64(v) for v in values[pos : pos + 3])
    if delimiter != _DELIMITER:
        raise BlockReportError(
            f"legacy block list: long {pos} should start the delimiter (-1, -1, -1) after "
            f"{finalized} finalized replicas, found {delimiter}"
        )
    pos += 3
    for i in range(uc):
        where = f"legacy block list, replica under construction {i}"
        r = ReportedReplica(
            _signed64(values[pos]),
            _signed64(values[pos + 1]),
            _signed64(values[pos + 2]),
            _state(_signed64(values[pos + 3]), where),
        )
        _check_replica(r, where)
        out.append(r)
        pos += 4
    return out


def encode_longs(replicas: Iterable[ReportedReplica]) -> list[int]:
    """The legacy block list of replicas as the uint64s the wire carries (with the delimiter)."""
    finalized: list[int] = []
    uc: list[int] = []
    for i, r in enumerate(replicas):
        _check_replica(r, f"replica {i}")
        if r.state == ReplicaState.FINALIZED:
            finalized += (r.block_id, r.num_bytes, r.gen_stamp)
        else:
            uc += (r.block_id, r.num_bytes, r.gen_stamp, int(r.state))
    longs = [len(finalized) // 3, len(uc) // 4, *finalized, *_DELIMITER, *uc]
    return [v & _UINT64 for v in longs]


def _varint(value: int) -> bytes:
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def encode_buffers(replicas: Iterable[ReportedReplica]) -> tuple[int, list[bytes]]:
    """(numberOfBlocks, blocksBuffers) of replicas in the buffers encoding, 64 KiB pieces."""
    parts: list[bytes] = []
    count = 0
    for i, r in enumerate(replicas):
        _check_replica(r, f"replica {i}")
        zigzag = ((r.block_id << 1) ^ (r.block_id >> 63)) & _UINT64
        parts.append(
            _varint(zigzag) + _varint(r.num_bytes) + _varint(r.gen_stamp) + _varint(int(r.state))
        )
        count += 1
    data = b"".join(parts)
    if not data:
        return 0, [b""]  # as HDFS sends an empty report: one empty piece
    return count, [data[p : p + CHUNK_SIZE] for p in range(0, len(data), CHUNK_SIZE)]


def _read_varint(data: bytes, pos: int, where: str) -> tuple[int, int]:
    value = 0
    shift = 0
    start = pos
    while True:
        if pos >= len(data):
            raise BlockReportError(f"{where}: the buffers end inside a varint at byte {start}")
        b = data[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            break
        shift += 7
        if shift >= 70:
            raise BlockReportError(f"{where}: varint at byte {start} is longer than 10 bytes")
    if value > _UINT64:
        raise BlockReportError(f"{where}: varint at byte {start} exceeds 64 bits")
    return value, pos


def decode_buffers(
    count: int, buffers: Sequence[bytes], max_blocks: int = DEFAULT_MAX_BLOCKS
) -> list[ReportedReplica]:
    """The count replicas of a buffers-encoded block list (the pieces are joined first)."""
    _check_count(count, max_blocks, "block buffers")
    data = b"".join(buffers)
    if count * _MIN_BUFFER_BYTES > len(data):
        raise BlockReportError(
            f"block buffers: {count} replicas cannot fit in {len(data)} bytes "
            f"(each takes at least {_MIN_BUFFER_BYTES})"
        )
    out: list[ReportedReplica] = []
    pos = 0
    for i in range(count):
        where = f"block buffers, replica {i}"
        zigzag, pos = _read_varint(data, pos, where)
        num_bytes, pos = _read_varint(data, pos, where)
        gen_stamp, pos = _read_varint(data, pos, where)
        state, pos = _read_varint(data, pos, where)
        r = ReportedReplica(
            (zigzag >> 1) ^ -(zigzag & 1),
            num_bytes & NUM_BYTES_MASK,
            _signed64(gen_stamp),
            _state(state & REPLICA_STATE_MASK, where),
        )
        _check_replica(r, where)
        out.append(r)
    if pos != len(data):
        raise BlockReportError(
            f"block buffers: {len(data) - pos} bytes left over after the {count} replicas "
            "numberOfBlocks declares"
        )
    return out
